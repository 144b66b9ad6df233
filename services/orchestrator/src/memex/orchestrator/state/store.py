"""The orchestrator's state in SQLite or PostgreSQL: conversations, queued turns, telemetry and
the LLM log.

One database (the ``state`` package: SQLite or PostgreSQL, with the versioned migrations of
``state/schema.sql``); each concern has its own store class over it:
``conversation/conversations.py`` (conversations and messages), ``queue/store.py`` (threads, turns
and claims), ``record/telemetry.py`` (telemetry, logged asks, LLM log), ``memory/traces.py`` (what a
forgotten note left), ``record/evidence_store.py`` (answers' evidence bundles).
``OrchestratorStore`` is all of them on one database; code that needs one part takes that part's
type. Calls are synchronous and short; async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

from memex.orchestrator.conversation.conversations import Conversation, ConversationStore, Message
from memex.orchestrator.memory.traces import ERASED, NoteTraces, NoteTraceStore
from memex.orchestrator.queue.store import TurnQueue
from memex.orchestrator.queue.turns import ERROR_TEXT_LIMIT, PendingTurns, Thread, Turn
from memex.orchestrator.record.evidence_store import EvidenceStore
from memex.orchestrator.record.telemetry import LoggedAsk, TelemetryStore
from memex.orchestrator.state import Database, new_id, now_iso

__all__ = [
    "ERASED",
    "ERROR_TEXT_LIMIT",
    "Conversation",
    "ConversationStore",
    "Database",
    "EvidenceStore",
    "LoggedAsk",
    "Message",
    "NoteTraceStore",
    "NoteTraces",
    "OrchestratorStore",
    "PendingTurns",
    "TelemetryStore",
    "Thread",
    "Turn",
    "TurnQueue",
    "new_id",
    "now_iso",
]


class OrchestratorStore(
    ConversationStore, TurnQueue, TelemetryStore, NoteTraceStore, EvidenceStore
):
    """One database (SQLite or PostgreSQL) holding everything the orchestrator persists."""

"""What the orchestrator's state holds of a forgotten note, and its removal (issue 11).

A forget (``memory/forget.py``) finds every row that references the note (its episode id or chunk
ids) or quotes it, removes them in one transaction, and scrubs the write-ahead log; conversations
and threads that cite it are the person's own and are only reported. An answer's evidence bundle
(issue 37) that shows or quotes the note goes whole: it exists to hold the note's words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memex.orchestrator.record import evidence
from memex.orchestrator.state import Database

ERASED = "[erased: quoted a forgotten note]"
"""What a forget leaves in an LLM log call's prompt and response (see ``purge_note_traces``)."""


@dataclass(frozen=True)
class NoteTraces:
    """What the orchestrator's state holds of one note (see ``OrchestratorStore.note_traces``)."""

    turns: list[str]
    """Telemetry turns whose query, answer or cited refs quote the note."""
    retrievals: list[tuple[str, str]]
    """(turn id, item id) telemetry retrieval rows of the note's chunks."""
    calls: list[str]
    """LLM log calls whose prompt or response quotes the note."""
    conversations: list[str]
    threads: list[str]
    """Conversations and threads with a message citing the note (reported, never changed)."""
    evidence: list[str] = field(default_factory=list)
    """Evidence bundles (their telemetry turn ids) that show, cite or quote the note."""


class NoteTraceStore(Database):
    """Finds and removes what the orchestrator's state holds of one note."""

    def note_traces(
        self, tenant: str, episode_id: str, chunk_ids: Sequence[str], quotes: Callable[[str], bool]
    ) -> NoteTraces:
        """Every row that references a note (its episode id or chunk ids) or quotes it
        (``quotes`` says whether a text does): telemetry turns whose query, answer or cited refs
        quote it, retrieval rows of its chunks (any version: chunk ids are ``<episode_id>-<n>``),
        LLM log calls whose prompt or response quotes it, and the conversations and threads
        whose messages cite it, and the evidence bundles that show, cite or quote it. LLM log
        calls are the tenant's, and those logged before calls carried a tenant (whose they were
        is not known, so they are searched for every tenant)."""
        ids = sorted(set(chunk_ids))
        in_ids = f"r.item_id IN ({', '.join('?' * len(ids))}) OR " if ids else ""
        with self._read() as db:
            turns = [
                r["id"]
                for r in db.execute(
                    "SELECT id, query, answer, cited_refs FROM telemetry_turns WHERE tenant = ?",
                    (tenant,),
                )
                if quotes(r["query"]) or quotes(r["answer"]) or quotes(r["cited_refs"])
            ]
            retrievals = [
                (r["turn_id"], r["item_id"])
                for r in db.execute(
                    "SELECT r.turn_id, r.item_id FROM telemetry_retrievals r "
                    "JOIN telemetry_turns t ON t.id = r.turn_id WHERE t.tenant = ? AND "
                    f"({in_ids}substr(r.item_id, 1, CAST(? AS INTEGER)) = ?)",
                    (tenant, *ids, len(episode_id) + 1, f"{episode_id}-"),
                )
            ]
            calls = [
                r["id"]
                for r in db.execute(
                    "SELECT id, prompt, response FROM llm_log WHERE tenant IN (?, '') "
                    "AND (prompt != ? OR response != ?)",
                    (tenant, ERASED, ERASED),
                )
                if quotes(r["prompt"]) or quotes(r["response"])
            ]
            pattern = f'%"episode_id": "{episode_id}"%'
            conversations = [
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT c.id FROM messages m JOIN conversations c "
                    "ON c.id = m.conversation_id WHERE c.tenant = ? AND m.citations LIKE ?",
                    (tenant, pattern),
                )
            ]
            threads = [
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT h.id FROM turns t JOIN threads h ON h.id = t.thread_id "
                    "WHERE h.tenant = ? AND t.citations LIKE ?",
                    (tenant, pattern),
                )
            ]
            bundles = [
                r["turn_id"]
                for r in db.execute(
                    "SELECT turn_id, bundle FROM evidence WHERE tenant = ?", (tenant,)
                )
                if any(quotes(t) for t in evidence.texts(json.loads(r["bundle"])) if t)
            ]
        return NoteTraces(turns, retrievals, calls, conversations, threads, bundles)

    def purge_note_traces(self, traces: NoteTraces) -> None:
        """Removes what ``note_traces`` found, in one transaction: the telemetry turns (their
        retrieval rows cascade), the retrieval rows of the note's chunks, and the prompt and
        response of each LLM log call (the row stays, so the log still shows that a call was
        made, when, by which model, and its token counts; only what it said about the note goes),
        and the evidence bundles. Conversations and threads are the person's own and are left
        alone."""
        with self._tx() as db:
            db.executemany(
                "DELETE FROM evidence WHERE turn_id = ?", [(t,) for t in traces.evidence]
            )
            db.executemany("DELETE FROM telemetry_turns WHERE id = ?", [(t,) for t in traces.turns])
            db.executemany(
                "DELETE FROM telemetry_retrievals WHERE turn_id = ? AND item_id = ?",
                traces.retrievals,
            )
            db.executemany(
                "UPDATE llm_log SET prompt = ?, response = ? WHERE id = ?",
                [(ERASED, ERASED, c) for c in traces.calls],
            )

    def scrub(self) -> bool:
        """After a forget: on SQLite, checkpoints and truncates the WAL, which still holds the
        pages as they were before the delete; on PostgreSQL, VACUUMs the tables (see the engines'
        ``scrub``). False when that could not be done now; the next checkpoint overwrites it."""
        return self._engine.scrub()

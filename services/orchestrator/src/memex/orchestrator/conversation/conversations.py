"""Conversations and their messages (SPEC B11), in the orchestrator's database."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memex.orchestrator.memory.items import Citation
from memex.orchestrator.state import Connection, Database, Row, new_id, now_iso
from memex.shared.errors import NotFound


@dataclass(frozen=True)
class Message:
    id: str
    role: str
    text: str
    citations: list[dict[str, Any]]
    model: str
    latency_ms: float
    created_at: str
    # A reply that drew on sensitive notes: history only for requests that may see them.
    sensitive: bool = False
    # Read by a request that may not see it: ``text`` is a placeholder, no citations.
    withheld: bool = False


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    persona: str
    created_at: str
    updated_at: str
    message_count: int


class ConversationStore(Database):
    """Conversations (SPEC B11): created by chat, listed, replayed and forgotten."""

    def create_conversation(self, tenant: str, title: str, persona: str) -> str:
        """A new, empty conversation; returns its id."""
        conversation_id, stamp = new_id(), now_iso()
        with self._tx() as db:
            db.execute(
                "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, tenant, title, persona, stamp, stamp),
            )
        return conversation_id

    def _conversation_row(self, db: Connection, tenant: str, conversation_id: str) -> Row:
        row = db.execute(
            "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
            "FROM conversations c WHERE c.id = ? AND c.tenant = ?",
            (conversation_id, tenant),
        ).fetchone()
        if row is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        found: Row = row
        return found

    def add_message(
        self,
        tenant: str,
        conversation_id: str,
        role: str,
        text: str,
        citations: Sequence[Citation] = (),
        model: str = "",
        latency_ms: float = 0.0,
        *,
        sensitive: bool = False,
    ) -> str:
        """Appends a message; returns its id. ``sensitive``: the reply drew on sensitive notes."""
        message_id, stamp = new_id(), now_iso()
        with self._tx() as db:
            self._conversation_row(db, tenant, conversation_id)
            db.execute(
                "INSERT INTO messages (id, conversation_id, role, text, citations, model, "
                "latency_ms, created_at, sensitive) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    conversation_id,
                    role,
                    text,
                    json.dumps([asdict(c) for c in citations]),
                    model,
                    latency_ms,
                    stamp,
                    int(sensitive),
                ),
            )
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (stamp, conversation_id)
            )
        return message_id

    def list_conversations(self, tenant: str, limit: int = 50) -> list[Conversation]:
        """The tenant's conversations, most recently active first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
                "FROM conversations c WHERE tenant = ? ORDER BY updated_at DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        return [_conversation(row) for row in rows]

    def get_conversation(
        self, tenant: str, conversation_id: str
    ) -> tuple[Conversation, list[Message]]:
        """A conversation with all its messages, oldest first; NotFound if unknown."""
        with self._read() as db:
            row = self._conversation_row(db, tenant, conversation_id)
            messages = db.execute(
                "SELECT * FROM messages WHERE conversation_id = ? ORDER BY created_at, rowid",
                (conversation_id,),
            ).fetchall()
        return _conversation(row), [_message(m) for m in messages]

    def recent_messages(self, tenant: str, conversation_id: str, count: int) -> list[Message]:
        """The last ``count`` messages, oldest first."""
        _, messages = self.get_conversation(tenant, conversation_id)
        return messages[-count:] if count else []

    def delete_conversation(self, tenant: str, conversation_id: str) -> None:
        """Forgets a conversation: its messages and the telemetry linked to it go too, and the
        prompt and response of each model call made for it are erased (the log row stays: that
        a call was made is the audit's)."""
        with self._tx() as db:
            self._conversation_row(db, tenant, conversation_id)
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            db.execute(
                "UPDATE llm_log SET prompt = ?, response = ? "
                "WHERE conversation_id = ? AND tenant = ?",
                (FORGOTTEN_CONVERSATION, FORGOTTEN_CONVERSATION, conversation_id, tenant),
            )


# What deleting a conversation leaves in the LLM log rows of its model calls.
FORGOTTEN_CONVERSATION = "[erased: its conversation was forgotten]"


def _conversation(row: Row) -> Conversation:
    return Conversation(
        row["id"], row["title"], row["persona"], row["created_at"], row["updated_at"], row["n"]
    )


def _message(row: Row) -> Message:
    return Message(
        row["id"],
        row["role"],
        row["text"],
        json.loads(row["citations"]),
        row["model"],
        row["latency_ms"],
        row["created_at"],
        bool(row["sensitive"]),
    )

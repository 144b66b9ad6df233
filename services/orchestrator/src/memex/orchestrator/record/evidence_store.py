"""Where evidence bundles are kept (issue 37): the ``evidence`` table of the orchestrator's state.

A bundle is written in the transaction of its answer's telemetry turn (``insert``, called by
``TelemetryStore.record_telemetry``), and a queued turn's answer names it in the transaction
that writes the answer (``link``, called by ``TurnQueue.answer_turn``). A reader finds it by any
id it holds for the answer: an ask's turn id, a chat reply's message id or a queued answer's
turn id (``EvidenceStore.evidence``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memex.orchestrator.record import evidence
from memex.orchestrator.state import Connection, Database, now_iso
from memex.shared.errors import InvalidArgument, NotFound

NO_ID = (
    "turn_id is empty: give the answer's id (an ask's turn_id, a chat reply's message_id, or a "
    "queued answer's turn id)"
)


def insert(
    db: Connection,
    *,
    turn_id: str,
    tenant: str,
    bundle: Mapping[str, Any],
    message_id: str = "",
) -> None:
    """Stores ``bundle`` as the evidence of telemetry turn ``turn_id`` (in ``db``'s transaction),
    with its id and time filled in; ``message_id`` is the chat reply it is the evidence of."""
    stamp = now_iso()
    stored = {**bundle, "turn_id": turn_id, "created_at": stamp}
    db.execute(
        "INSERT INTO evidence (turn_id, tenant, message_id, bundle, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (turn_id, tenant, message_id or None, json.dumps(stored, ensure_ascii=False), stamp),
    )


def link(
    db: Connection,
    *,
    turn_id: str,
    reply_turn_id: str,
    thread_id: str,
    question: str,
    asked_sensitive: bool,
) -> bool:
    """Names the assistant turn ``reply_turn_id`` as the answer whose bundle is ``turn_id``'s (in
    ``db``'s transaction): the bundle becomes a queued answer's, with the turn's own question.
    False when there is no such bundle (an ask recorded before bundles were kept)."""
    row = db.execute("SELECT bundle FROM evidence WHERE turn_id = ?", (turn_id,)).fetchone()
    if row is None:
        return False
    bundle = evidence.linked(
        json.loads(row["bundle"]),
        thread_id=thread_id,
        reply_turn_id=reply_turn_id,
        question=question,
        asked_sensitive=asked_sensitive,
    )
    db.execute(
        "UPDATE evidence SET reply_turn_id = ?, bundle = ? WHERE turn_id = ?",
        (reply_turn_id, json.dumps(bundle, ensure_ascii=False), turn_id),
    )
    return True


class EvidenceStore(Database):
    """Reads evidence bundles (they are written with telemetry and queued answers)."""

    def evidence(self, tenant: str, answer_id: str) -> dict[str, Any]:
        """The stored bundle of the tenant's answer ``answer_id`` (an ask's turn id, a chat
        reply's message id or a queued answer's turn id), whole: ``evidence.readable`` applies
        the read policy. InvalidArgument for an empty id, NotFound for one without a bundle."""
        answer_id = answer_id.strip()
        if not answer_id:
            raise InvalidArgument(NO_ID)
        with self._read() as db:
            row = db.execute(
                "SELECT bundle FROM evidence WHERE tenant = ? "
                "AND (turn_id = ? OR message_id = ? OR reply_turn_id = ?)",
                (tenant, answer_id, answer_id, answer_id),
            ).fetchone()
        if row is None:
            raise NotFound(
                f"no evidence bundle for answer {answer_id!r}: give an ask's turn_id, a chat "
                "reply's message_id or a queued answer's turn id (answers given before memex "
                "kept bundles have none, and forgetting a note, conversation or thread deletes "
                "theirs)"
            )
        bundle: dict[str, Any] = json.loads(row["bundle"])
        return bundle

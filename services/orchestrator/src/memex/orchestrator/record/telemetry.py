"""Telemetry (SPEC B12) and the LLM log (SPEC B4), in the orchestrator's database.

A telemetry turn is written per search, ask and chat, with one row per retrieved item; asks keep
their answer and cited refs for ``memex eval --replay``. The LLM log has one row per model call,
written before the call (``record/audit.py`` does not call the model if it cannot be written).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memex.orchestrator.memory.items import CheckedSpecific
from memex.orchestrator.record import evidence_store
from memex.orchestrator.state import Database, new_id, now_iso


@dataclass(frozen=True)
class LoggedAsk:
    """An ask as its telemetry turn recorded it (what `memex eval --replay` asks again)."""

    turn_id: str
    question: str
    persona: str
    model: str
    prompt_version: str
    answer: str
    abstained: bool
    cited_refs: list[str]
    latency_ms: float
    created_at: str


class TelemetryStore(Database):
    """Telemetry turns and their retrievals, logged asks, and the audited LLM log."""

    def record_telemetry(
        self,
        *,
        tenant: str,
        kind: str,
        query: str,
        latency_ms: float,
        model: str = "",
        persona: str = "",
        prompt_version: str = "",
        grounding_score: float | None = None,
        abstained: bool = False,
        conversation_id: str | None = None,
        retrievals: Sequence[tuple[str, float, dict[str, float], bool]] = (),
        dropped_steps: Sequence[str] = (),
        answer: str = "",
        cited_refs: Sequence[str] = (),
        claim_check: Sequence[CheckedSpecific] = (),
        dropped_claims: Sequence[str] = (),
        evidence: Mapping[str, Any] | None = None,
        message_id: str = "",
    ) -> str:
        """A turn row plus one row per retrieved item (item id, fused score, channel scores,
        cited), ranked in the order given; returns the turn id. ``answer`` and ``cited_refs``
        keep what an ask answered, for replay; ``claim_check`` and ``dropped_claims`` what the
        claim check found in it. ``evidence``, an answer's bundle (``evidence.build``), is
        stored in the same transaction, as the evidence of chat reply ``message_id`` if given."""
        turn_id = new_id()
        with self._tx() as db:
            db.execute(
                "INSERT INTO telemetry_turns (id, tenant, kind, query, model, persona, "
                "prompt_version, grounding_score, abstained, latency_ms, conversation_id, "
                "created_at, dropped_steps, answer, cited_refs, claim_check, dropped_claims) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    turn_id,
                    tenant,
                    kind,
                    query,
                    model,
                    persona,
                    prompt_version,
                    grounding_score,
                    int(abstained),
                    latency_ms,
                    conversation_id,
                    now_iso(),
                    json.dumps(list(dropped_steps)),
                    answer,
                    json.dumps(list(cited_refs)),
                    json.dumps([dataclasses.asdict(s) for s in claim_check]),
                    json.dumps(list(dropped_claims)),
                ),
            )
            db.executemany(
                "INSERT INTO telemetry_retrievals VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (turn_id, item_id, rank, fused, json.dumps(scores), int(cited))
                    for rank, (item_id, fused, scores, cited) in enumerate(retrievals, start=1)
                ],
            )
            if evidence is not None:
                evidence_store.insert(
                    db, turn_id=turn_id, tenant=tenant, bundle=evidence, message_id=message_id
                )
        return turn_id

    def list_logged_asks(self, tenant: str, limit: int = 50) -> list[LoggedAsk]:
        """The tenant's asks from telemetry, newest first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT * FROM telemetry_turns WHERE tenant = ? AND kind = 'ask' "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        return [
            LoggedAsk(
                r["id"],
                r["query"],
                r["persona"],
                r["model"],
                r["prompt_version"],
                r["answer"],
                bool(r["abstained"]),
                json.loads(r["cited_refs"]),
                r["latency_ms"],
                r["created_at"],
            )
            for r in rows
        ]

    def log_call_started(
        self,
        *,
        request_id: str,
        purpose: str,
        model: str,
        persona: str,
        prompt: str,
        tenant: str = "",
        conversation_id: str = "",
    ) -> str:
        """Writes the audit row before a model call; raises if it cannot (fail closed).
        ``tenant`` is whose request the call serves ("" when unknown); ``conversation_id`` the
        chat conversation it answers in ("" for any other call), so that deleting the
        conversation erases its text."""
        call_id = new_id()
        with self._tx() as db:
            db.execute(
                "INSERT INTO llm_log (id, request_id, purpose, model, persona, prompt, "
                "created_at, tenant, conversation_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    call_id,
                    request_id,
                    purpose,
                    model,
                    persona,
                    prompt,
                    now_iso(),
                    tenant,
                    conversation_id,
                ),
            )
        return call_id

    def log_call_finished(
        self,
        call_id: str,
        *,
        response: str,
        prompt_tokens: int,
        completion_tokens: int,
        latency_ms: float,
        outcome: str,
    ) -> None:
        """Completes the audit row of a model call."""
        with self._tx() as db:
            db.execute(
                "UPDATE llm_log SET response = ?, prompt_tokens = ?, completion_tokens = ?, "
                "latency_ms = ?, outcome = ? WHERE id = ?",
                (response, prompt_tokens, completion_tokens, latency_ms, outcome, call_id),
            )

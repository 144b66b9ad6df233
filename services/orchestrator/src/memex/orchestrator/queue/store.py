"""The queue of chat turns (SPEC B13): threads, their turns, and the workers' claims on them.

A turn's claim is a single conditional UPDATE, so two workers (even in two processes) never hold
the same turn; the answer and the answered state are written in one transaction that only succeeds
while the claim is still held. Every change to a turn is announced on ``events`` (issue 37):
a NOTIFY in the changing transaction (PostgreSQL), then an in-process signal once it commits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from memex.orchestrator.memory.items import Citation
from memex.orchestrator.queue.events import CHANNEL, TurnEvents, payload
from memex.orchestrator.queue.turns import (
    ERROR_TEXT_LIMIT,
    FORGOTTEN_THREAD,
    TURN_REQUEST,
    PendingTurns,
    Thread,
    Turn,
    turn_from_row,
)
from memex.orchestrator.record import evidence_store
from memex.orchestrator.state import Connection, Database, new_id, now_iso
from memex.shared.errors import NotFound


class TurnQueue(Database):
    """Queued chat turns (SPEC B13): pending → thinking (claimed, leased) → answered | error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events = TurnEvents()

    def _changed(self, db: Connection, thread_id: str, tenant: str = "") -> tuple[str, str]:
        """Announces in ``db``'s transaction (to other processes, on PostgreSQL) that a turn of
        the thread changed; returns the thread to signal in this process after the commit."""
        if not tenant:
            row = db.execute("SELECT tenant FROM threads WHERE id = ?", (thread_id,)).fetchone()
            tenant = row[0] if row is not None else ""
        self._engine.notify(db, CHANNEL, payload(tenant, thread_id))
        return tenant, thread_id

    def _signal(self, threads: Sequence[tuple[str, str]]) -> None:
        """Wakes this process's watchers of ``threads`` (their changes are committed)."""
        for tenant, thread_id in set(threads):
            self.events.signal(tenant, thread_id)

    def create_turn(
        self,
        tenant: str,
        thread_id: str,
        text: str,
        title: str,
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> Turn:
        """A pending user turn, in a new thread when ``thread_id`` is empty, with whether its
        answer may use sensitive notes and the day whose memory it reads ("" for now)."""
        stamp = now_iso()
        with self._tx() as db:
            if thread_id:
                _require_thread(db, tenant, thread_id)
            else:
                thread_id = new_id()
                db.execute(
                    "INSERT INTO threads VALUES (?, ?, ?, ?)", (thread_id, tenant, title, stamp)
                )
            turn_id, seq = new_id(), self._next_seq(db)
            db.execute(
                "INSERT INTO turns "
                "(id, thread_id, role, text, state, seq, created_at, include_sensitive, as_of) "
                "VALUES (?, ?, 'user', ?, 'pending', ?, ?, ?, ?)",
                (turn_id, thread_id, text, seq, stamp, int(include_sensitive), as_of),
            )
            changed = self._changed(db, thread_id, tenant)
        self._signal([changed])
        return self.get_turn(tenant, turn_id)

    def _next_seq(self, db: Connection) -> int:
        # Turns are ordered by one counter across threads. Two transactions must not read the
        # same MAX: SQLite's BEGIN IMMEDIATE already runs them one at a time, PostgreSQL takes a
        # lock for the rest of the transaction.
        self._engine.serialize(db, "turns.seq")
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns").fetchone()[0])

    def get_turn(self, tenant: str, turn_id: str) -> Turn:
        """One turn; NotFound if unknown to this tenant."""
        with self._read() as db:
            row = db.execute(
                "SELECT t.*, h.tenant FROM turns t JOIN threads h ON h.id = t.thread_id "
                "WHERE t.id = ? AND h.tenant = ?",
                (turn_id, tenant),
            ).fetchone()
        if row is None:
            raise NotFound(f"no turn {turn_id!r}")
        return turn_from_row(row)

    def list_threads(self, tenant: str, limit: int = 50) -> list[Thread]:
        """The tenant's threads, newest first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT * FROM threads WHERE tenant = ? ORDER BY created_at DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        return [Thread(r["id"], r["title"], r["created_at"]) for r in rows]

    def list_turns(self, tenant: str, thread_id: str) -> list[Turn]:
        """Every turn of a thread, oldest first; NotFound for an unknown thread."""
        with self._read() as db:
            _require_thread(db, tenant, thread_id)
            rows = db.execute(
                "SELECT t.*, ? AS tenant FROM turns t WHERE thread_id = ? ORDER BY seq",
                (tenant, thread_id),
            ).fetchall()
        return [turn_from_row(r) for r in rows]

    def pending_turns(self) -> PendingTurns:
        """How many user turns wait for a worker, and the age of the oldest (0 when none)."""
        with self._read() as db:
            row = db.execute(
                "SELECT COUNT(*), MIN(created_at) FROM turns "
                "WHERE role = 'user' AND state = 'pending'"
            ).fetchone()
        count, oldest = int(row[0]), row[1]
        if oldest is None:
            return PendingTurns(0, 0.0)
        age = (datetime.now(UTC) - datetime.fromisoformat(oldest)).total_seconds()
        return PendingTurns(count, max(age, 0.0))  # a clock stepped back is not a negative age

    def claim_next(self, worker_id: str, lease_seconds: float) -> Turn | None:
        """Atomically moves the oldest pending user turn to thinking, leased to ``worker_id``."""
        with self._tx() as db:
            row = db.execute(
                "UPDATE turns SET state = 'thinking', claimed_by = ?, lease_until = ? "
                "WHERE id = (SELECT id FROM turns WHERE role = 'user' AND state = 'pending' "
                f"            ORDER BY seq LIMIT 1 {self._engine.skip_locked}) "
                "AND state = 'pending' "
                "RETURNING *, "
                "(SELECT tenant FROM threads WHERE threads.id = turns.thread_id) AS tenant",
                (worker_id, time.time() + lease_seconds),
            ).fetchone()
            if row is None:
                return None
            changed = self._changed(db, row["thread_id"], row["tenant"])
        self._signal([changed])
        return turn_from_row(row)

    def renew_lease(self, turn_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extends a claim; False when the claim was lost."""
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE turns SET lease_until = ? "
                "WHERE id = ? AND claimed_by = ? AND state = 'thinking'",
                (time.time() + lease_seconds, turn_id, worker_id),
            )
        return cursor.rowcount == 1

    def requeue_expired(self) -> int:
        """Puts turns whose worker died (lease expired while thinking) back to pending."""
        with self._tx() as db:
            rows = db.execute(
                "UPDATE turns SET state = 'pending', claimed_by = '', lease_until = 0 "
                "WHERE state = 'thinking' AND lease_until < ? RETURNING thread_id",
                (time.time(),),
            ).fetchall()
            changed = [self._changed(db, r["thread_id"]) for r in rows]
        self._signal(changed)
        return len(rows)

    def requeue_worker(self, worker_id: str) -> int:
        """Puts back every turn held by ``worker_id`` (a restarted worker's own orphans)."""
        with self._tx() as db:
            rows = db.execute(
                "UPDATE turns SET state = 'pending', claimed_by = '', lease_until = 0 "
                "WHERE state = 'thinking' AND claimed_by = ? RETURNING thread_id",
                (worker_id,),
            ).fetchall()
            changed = [self._changed(db, r["thread_id"]) for r in rows]
        self._signal(changed)
        return len(rows)

    def prior_turns(self, turn: Turn) -> list[Turn]:
        """The thread's answered questions before ``turn``, each followed by its answer."""
        with self._read() as db:
            rows = db.execute(
                "SELECT *, '' AS tenant FROM turns WHERE thread_id = ? ORDER BY seq",
                (turn.thread_id,),
            ).fetchall()
        replies = {r["reply_to"]: turn_from_row(r) for r in rows if r["role"] == "assistant"}
        prior: list[Turn] = []
        for row in rows:
            if row["role"] == "user" and row["seq"] < turn.seq and row["state"] == "answered":
                prior.append(turn_from_row(row))
                if row["id"] in replies:
                    prior.append(replies[row["id"]])
        return prior

    def answer_turn(
        self,
        turn: Turn,
        worker_id: str,
        text: str,
        citations: Sequence[Citation],
        evidence_turn_id: str = "",
    ) -> bool:
        """Writes the assistant turn and marks the user turn answered, in one transaction, only if
        ``worker_id`` still holds the claim (so a turn is answered exactly once). The evidence
        bundle of the ask that answered it (telemetry turn ``evidence_turn_id``) is named as this
        answer's in the same transaction (``evidence_store.link``)."""
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE turns SET state = 'answered', lease_until = 0 "
                "WHERE id = ? AND claimed_by = ? AND state = 'thinking'",
                (turn.id, worker_id),
            )
            if cursor.rowcount != 1:
                return False
            seq, reply_id = self._next_seq(db), new_id()
            db.execute(
                "INSERT INTO turns "
                "(id, thread_id, role, text, citations, state, reply_to, seq, created_at) "
                "VALUES (?, ?, 'assistant', ?, ?, 'answered', ?, ?, ?)",
                (
                    reply_id,
                    turn.thread_id,
                    text,
                    json.dumps([asdict(c) for c in citations]),
                    turn.id,
                    seq,
                    now_iso(),
                ),
            )
            if evidence_turn_id:
                evidence_store.link(
                    db,
                    turn_id=evidence_turn_id,
                    reply_turn_id=reply_id,
                    thread_id=turn.thread_id,
                    question=turn.text,
                    asked_sensitive=turn.include_sensitive,
                )
            changed = self._changed(db, turn.thread_id, turn.tenant)
        self._signal([changed])
        return True

    def fail_turn(self, turn: Turn, worker_id: str, error: str) -> bool:
        """Marks a claimed turn as failed, with the error truncated."""
        if len(error) > ERROR_TEXT_LIMIT:
            error = error[: ERROR_TEXT_LIMIT - 1] + "…"
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE turns SET state = 'error', error = ?, lease_until = 0 "
                "WHERE id = ? AND claimed_by = ? AND state = 'thinking'",
                (error, turn.id, worker_id),
            )
            if cursor.rowcount != 1:
                return False
            changed = self._changed(db, turn.thread_id, turn.tenant)
        self._signal([changed])
        return True

    def delete_thread(self, tenant: str, thread_id: str) -> tuple[int, int]:
        """Forgets a queued-chat thread with all its turns (the schema cascades them), and what
        answering them left elsewhere: the telemetry of each answer (its evidence bundle goes
        with it) and the text of each model call made for a turn (the log row stays, as a
        forgotten note's does: that a call was made is the audit's). Returns (turns deleted,
        turns of the thread left afterwards, 0 unless something went wrong). NotFound for a
        thread unknown to this tenant. A worker answering a turn of it finds its claim gone,
        writes nothing, and erases what its answer left (``forget_dropped_answer``)."""
        with self._tx() as db:
            _require_thread(db, tenant, thread_id, " (GET /v1/threads lists them)")
            ids = [
                str(row[0])
                for row in db.execute("SELECT id FROM turns WHERE thread_id = ?", (thread_id,))
            ]
            _erase_answers(db, ids)  # before the delete: the evidence rows name the replies
            db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            left = int(
                db.execute(
                    "SELECT COUNT(*) FROM turns WHERE thread_id = ?", (thread_id,)
                ).fetchone()[0]
            )
            changed = self._changed(db, thread_id, tenant)  # its watchers end
        self._signal([changed])
        return len(ids), left

    def claim_nightly(self, job: str, tenant: str, day: str, worker_id: str) -> bool:
        """Claims the run of nightly ``job`` for ``tenant`` on ``day`` (YYYY-MM-DD) for this
        worker: True for the first replica to ask, False for every other (it skips the night)."""
        with self._tx() as db:
            cursor = db.execute(
                "INSERT INTO nightly_runs (job, tenant, day, worker_id, started_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (job, tenant, day, worker_id, now_iso()),
            )
            return cursor.rowcount == 1

    def forget_dropped_answer(self, turn_id: str, telemetry_turn_id: str) -> bool:
        """After a worker's answer to ``turn_id`` was dropped: when the turn is gone (its thread
        was forgotten while it was answered), erases what that answer left, its telemetry and
        evidence (``telemetry_turn_id``) and its model calls' text. True when it did; a turn
        still there was only taken back by another worker, whose calls share its log."""
        with self._tx() as db:
            if db.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchone():
                return False
            db.execute("DELETE FROM telemetry_turns WHERE id = ?", (telemetry_turn_id,))
            _erase_calls(db, [turn_id])
        return True


def _require_thread(db: Connection, tenant: str, thread_id: str, hint: str = "") -> None:
    """NotFound unless ``thread_id`` is a thread of ``tenant`` (another tenant's is unknown)."""
    found = db.execute(
        "SELECT 1 FROM threads WHERE id = ? AND tenant = ?", (thread_id, tenant)
    ).fetchone()
    if found is None:
        raise NotFound(f"no thread {thread_id!r}{hint}")


def _erase_answers(db: Connection, turn_ids: Sequence[str]) -> None:
    """Deletes the telemetry of the answers to ``turn_ids`` (their evidence cascades) and
    erases the text of the model calls made for them."""
    if not turn_ids:
        return
    marks = ", ".join("?" * len(turn_ids))
    answers = db.execute(
        f"SELECT turn_id FROM evidence WHERE reply_turn_id IN ({marks})", tuple(turn_ids)
    ).fetchall()
    db.executemany("DELETE FROM telemetry_turns WHERE id = ?", [(a[0],) for a in answers])
    _erase_calls(db, turn_ids)


def _erase_calls(db: Connection, turn_ids: Sequence[str]) -> None:
    # A worker's model calls for a turn carry its request id (``worker.ChatWorker._answer``).
    marks = ", ".join("?" * len(turn_ids))
    db.execute(
        f"UPDATE llm_log SET prompt = ?, response = ? WHERE request_id IN ({marks})",
        (FORGOTTEN_THREAD, FORGOTTEN_THREAD, *(f"{TURN_REQUEST}{t}" for t in turn_ids)),
    )

"""The orchestrator's state in SQLite: conversations, queued turns, telemetry and the LLM log.

Schema and migrations are in ``schema.sql``. Calls are synchronous and short; async callers run
them with ``asyncio.to_thread``. Several processes (the service and chat workers) may share one
database file: every multi-row change is one transaction, and a turn's claim is a single
conditional UPDATE, so two workers never hold the same turn.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from memex.orchestrator.items import Citation
from memex.shared.errors import FailedPrecondition, NotFound

ERROR_TEXT_LIMIT = 500
ERASED = "[erased: quoted a forgotten note]"
"""What a forget leaves in an LLM log call's prompt and response (see ``purge_note_traces``)."""


def now_iso() -> str:
    """The current time as RFC 3339 UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A random, URL-safe id."""
    return uuid.uuid4().hex


def _migrations() -> list[tuple[int, str]]:
    text = resources.files("memex.orchestrator").joinpath("schema.sql").read_text(encoding="utf-8")
    parts = re.split(r"^-- migration (\d+)$", text, flags=re.M)
    return [(int(number), body) for number, body in zip(parts[1::2], parts[2::2], strict=True)]


@dataclass(frozen=True)
class Message:
    id: str
    role: str
    text: str
    citations: list[dict[str, Any]]
    model: str
    latency_ms: float
    created_at: str


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    persona: str
    created_at: str
    updated_at: str
    message_count: int


@dataclass(frozen=True)
class Turn:
    id: str
    thread_id: str
    role: str
    text: str
    citations: list[dict[str, Any]]
    state: str
    error: str
    seq: int
    created_at: str
    tenant: str = ""


@dataclass(frozen=True)
class Thread:
    id: str
    title: str
    created_at: str


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


class OrchestratorStore:
    """One SQLite database holding everything the orchestrator persists."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an acknowledged write survives a crash
        self._db.execute("PRAGMA foreign_keys=ON")
        # Deleted rows are zeroed, not just unlinked: what a person forgets must not stay readable
        # in free pages of the file (docs/orchestrator.md, "Forgetting").
        self._db.execute("PRAGMA secure_delete=ON")
        self._migrate()

    def close(self) -> None:
        """Closes the connection."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _migrate(self) -> None:
        with self._tx() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            latest = 0
            for number, body in _migrations():
                latest = number
                if number > version:
                    for statement in re.sub(r"--[^\n]*", "", body).split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute(f"PRAGMA user_version = {number}")
            if version > latest:
                raise FailedPrecondition(
                    f"{self.path} has schema version {version}, newer than this memex ({latest})"
                )

    # Conversations (SPEC B11).

    def create_conversation(self, tenant: str, title: str, persona: str) -> str:
        """A new, empty conversation; returns its id."""
        conversation_id, stamp = new_id(), now_iso()
        with self._tx() as db:
            db.execute(
                "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, tenant, title, persona, stamp, stamp),
            )
        return conversation_id

    def _conversation_row(
        self, db: sqlite3.Connection, tenant: str, conversation_id: str
    ) -> sqlite3.Row:
        row = db.execute(
            "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
            "FROM conversations c WHERE c.id = ? AND c.tenant = ?",
            (conversation_id, tenant),
        ).fetchone()
        if row is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        found: sqlite3.Row = row
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
    ) -> str:
        """Appends a message; returns its id."""
        message_id, stamp = new_id(), now_iso()
        with self._tx() as db:
            self._conversation_row(db, tenant, conversation_id)
            db.execute(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    message_id,
                    conversation_id,
                    role,
                    text,
                    json.dumps([asdict(c) for c in citations]),
                    model,
                    latency_ms,
                    stamp,
                ),
            )
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (stamp, conversation_id)
            )
        return message_id

    def list_conversations(self, tenant: str, limit: int = 50) -> list[Conversation]:
        """The tenant's conversations, most recently active first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
                "FROM conversations c WHERE tenant = ? ORDER BY updated_at DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        return [_conversation(row) for row in rows]

    def get_conversation(
        self, tenant: str, conversation_id: str
    ) -> tuple[Conversation, list[Message]]:
        """A conversation with all its messages, oldest first; NotFound if unknown."""
        with self._lock:
            row = self._conversation_row(self._db, tenant, conversation_id)
            messages = self._db.execute(
                "SELECT * FROM messages WHERE conversation_id = ? ORDER BY created_at, rowid",
                (conversation_id,),
            ).fetchall()
        return _conversation(row), [_message(m) for m in messages]

    def recent_messages(self, tenant: str, conversation_id: str, count: int) -> list[Message]:
        """The last ``count`` messages, oldest first."""
        _, messages = self.get_conversation(tenant, conversation_id)
        return messages[-count:] if count else []

    def delete_conversation(self, tenant: str, conversation_id: str) -> None:
        """Forgets a conversation: its messages and the telemetry linked to it go too."""
        with self._tx() as db:
            self._conversation_row(db, tenant, conversation_id)
            db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # Queued chat turns (SPEC B13).

    def create_turn(self, tenant: str, thread_id: str, text: str, title: str) -> Turn:
        """A pending user turn, in a new thread when ``thread_id`` is empty."""
        stamp = now_iso()
        with self._tx() as db:
            if thread_id:
                if (
                    db.execute(
                        "SELECT 1 FROM threads WHERE id = ? AND tenant = ?", (thread_id, tenant)
                    ).fetchone()
                    is None
                ):
                    raise NotFound(f"no thread {thread_id!r}")
            else:
                thread_id = new_id()
                db.execute(
                    "INSERT INTO threads VALUES (?, ?, ?, ?)", (thread_id, tenant, title, stamp)
                )
            turn_id = new_id()
            seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns").fetchone()[0])
            db.execute(
                "INSERT INTO turns (id, thread_id, role, text, state, seq, created_at) "
                "VALUES (?, ?, 'user', ?, 'pending', ?, ?)",
                (turn_id, thread_id, text, seq, stamp),
            )
        return self.get_turn(tenant, turn_id)

    def get_turn(self, tenant: str, turn_id: str) -> Turn:
        """One turn; NotFound if unknown to this tenant."""
        with self._lock:
            row = self._db.execute(
                "SELECT t.*, h.tenant FROM turns t JOIN threads h ON h.id = t.thread_id "
                "WHERE t.id = ? AND h.tenant = ?",
                (turn_id, tenant),
            ).fetchone()
        if row is None:
            raise NotFound(f"no turn {turn_id!r}")
        return _turn(row)

    def list_threads(self, tenant: str, limit: int = 50) -> list[Thread]:
        """The tenant's threads, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM threads WHERE tenant = ? ORDER BY created_at DESC LIMIT ?",
                (tenant, limit),
            ).fetchall()
        return [Thread(r["id"], r["title"], r["created_at"]) for r in rows]

    def list_turns(self, tenant: str, thread_id: str) -> list[Turn]:
        """Every turn of a thread, oldest first; NotFound for an unknown thread."""
        with self._lock:
            if (
                self._db.execute(
                    "SELECT 1 FROM threads WHERE id = ? AND tenant = ?", (thread_id, tenant)
                ).fetchone()
                is None
            ):
                raise NotFound(f"no thread {thread_id!r}")
            rows = self._db.execute(
                "SELECT t.*, ? AS tenant FROM turns t WHERE thread_id = ? ORDER BY seq",
                (tenant, thread_id),
            ).fetchall()
        return [_turn(r) for r in rows]

    def claim_next(self, worker_id: str, lease_seconds: float) -> Turn | None:
        """Atomically moves the oldest pending user turn to thinking, leased to ``worker_id``."""
        with self._tx() as db:
            row = db.execute(
                "UPDATE turns SET state = 'thinking', claimed_by = ?, lease_until = ? "
                "WHERE id = (SELECT id FROM turns WHERE role = 'user' AND state = 'pending' "
                "            ORDER BY seq LIMIT 1) AND state = 'pending' "
                "RETURNING *, "
                "(SELECT tenant FROM threads WHERE threads.id = turns.thread_id) AS tenant",
                (worker_id, time.time() + lease_seconds),
            ).fetchone()
        return _turn(row) if row is not None else None

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
            cursor = db.execute(
                "UPDATE turns SET state = 'pending', claimed_by = '', lease_until = 0 "
                "WHERE state = 'thinking' AND lease_until < ?",
                (time.time(),),
            )
        return cursor.rowcount

    def requeue_worker(self, worker_id: str) -> int:
        """Puts back every turn held by ``worker_id`` (a restarted worker's own orphans)."""
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE turns SET state = 'pending', claimed_by = '', lease_until = 0 "
                "WHERE state = 'thinking' AND claimed_by = ?",
                (worker_id,),
            )
        return cursor.rowcount

    def prior_turns(self, turn: Turn) -> list[Turn]:
        """The thread's answered questions before ``turn``, each followed by its answer."""
        with self._lock:
            rows = self._db.execute(
                "SELECT *, '' AS tenant FROM turns WHERE thread_id = ? ORDER BY seq",
                (turn.thread_id,),
            ).fetchall()
        replies = {r["reply_to"]: _turn(r) for r in rows if r["role"] == "assistant"}
        prior: list[Turn] = []
        for row in rows:
            if row["role"] == "user" and row["seq"] < turn.seq and row["state"] == "answered":
                prior.append(_turn(row))
                if row["id"] in replies:
                    prior.append(replies[row["id"]])
        return prior

    def answer_turn(
        self, turn: Turn, worker_id: str, text: str, citations: Sequence[Citation]
    ) -> bool:
        """Writes the assistant turn and marks the user turn answered, in one transaction, only if
        ``worker_id`` still holds the claim (so a turn is answered exactly once)."""
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE turns SET state = 'answered', lease_until = 0 "
                "WHERE id = ? AND claimed_by = ? AND state = 'thinking'",
                (turn.id, worker_id),
            )
            if cursor.rowcount != 1:
                return False
            seq = int(db.execute("SELECT MAX(seq) + 1 FROM turns").fetchone()[0])
            db.execute(
                "INSERT INTO turns "
                "(id, thread_id, role, text, citations, state, reply_to, seq, created_at) "
                "VALUES (?, ?, 'assistant', ?, ?, 'answered', ?, ?, ?)",
                (
                    new_id(),
                    turn.thread_id,
                    text,
                    json.dumps([asdict(c) for c in citations]),
                    turn.id,
                    seq,
                    now_iso(),
                ),
            )
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
        return cursor.rowcount == 1

    # Telemetry (SPEC B12) and the LLM log (SPEC B4).

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
    ) -> str:
        """A turn row plus one row per retrieved item (item id, fused score, channel scores,
        cited), ranked in the order given; returns the turn id. ``answer`` and ``cited_refs``
        keep what an ask answered, for replay."""
        turn_id = new_id()
        with self._tx() as db:
            db.execute(
                "INSERT INTO telemetry_turns (id, tenant, kind, query, model, persona, "
                "prompt_version, grounding_score, abstained, latency_ms, conversation_id, "
                "created_at, dropped_steps, answer, cited_refs) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            )
            db.executemany(
                "INSERT OR IGNORE INTO telemetry_retrievals VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (turn_id, item_id, rank, fused, json.dumps(scores), int(cited))
                    for rank, (item_id, fused, scores, cited) in enumerate(retrievals, start=1)
                ],
            )
        return turn_id

    def list_logged_asks(self, tenant: str, limit: int = 50) -> list[LoggedAsk]:
        """The tenant's asks from telemetry, newest first."""
        with self._lock:
            rows = self._db.execute(
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
        self, *, request_id: str, purpose: str, model: str, persona: str, prompt: str
    ) -> str:
        """Writes the audit row before a model call; raises if it cannot (fail closed)."""
        call_id = new_id()
        with self._tx() as db:
            db.execute(
                "INSERT INTO llm_log (id, request_id, purpose, model, persona, prompt, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (call_id, request_id, purpose, model, persona, prompt, now_iso()),
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

    # ---------------------------------------------------------------------------------------
    # Forget (issue 11): deleting a thread, and finding and removing what references or quotes
    # a forgotten note. Kept together, additive, so the store's split into modules moves it whole.
    # ---------------------------------------------------------------------------------------

    def delete_thread(self, tenant: str, thread_id: str) -> tuple[int, int]:
        """Forgets a queued-chat thread with all its turns (the schema cascades them); returns
        (turns deleted, turns of the thread left afterwards, 0 unless something went wrong).
        NotFound for a thread unknown to this tenant. A worker answering a turn of it finds its
        claim gone and writes nothing."""
        with self._tx() as db:
            if (
                db.execute(
                    "SELECT 1 FROM threads WHERE id = ? AND tenant = ?", (thread_id, tenant)
                ).fetchone()
                is None
            ):
                raise NotFound(f"no thread {thread_id!r} (GET /v1/threads lists them)")
            count = int(
                db.execute(
                    "SELECT COUNT(*) FROM turns WHERE thread_id = ?", (thread_id,)
                ).fetchone()[0]
            )
            db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
            left = int(
                db.execute(
                    "SELECT COUNT(*) FROM turns WHERE thread_id = ?", (thread_id,)
                ).fetchone()[0]
            )
        return count, left

    def note_traces(
        self, tenant: str, episode_id: str, chunk_ids: Sequence[str], quotes: Callable[[str], bool]
    ) -> NoteTraces:
        """Every row that references a note (its episode id or chunk ids) or quotes it
        (``quotes`` says whether a text does): telemetry turns whose query, answer or cited refs
        quote it, retrieval rows of its chunks (any version: chunk ids are ``<episode_id>-<n>``),
        LLM log calls whose prompt or response quotes it, and the conversations and threads
        whose messages cite it. The LLM log has no tenant column, so it is searched whole."""
        ids = json.dumps(sorted(set(chunk_ids)))
        with self._lock:
            turns = [
                r["id"]
                for r in self._db.execute(
                    "SELECT id, query, answer, cited_refs FROM telemetry_turns WHERE tenant = ?",
                    (tenant,),
                )
                if quotes(r["query"]) or quotes(r["answer"]) or quotes(r["cited_refs"])
            ]
            retrievals = [
                (r["turn_id"], r["item_id"])
                for r in self._db.execute(
                    "SELECT r.turn_id, r.item_id FROM telemetry_retrievals r "
                    "JOIN telemetry_turns t ON t.id = r.turn_id WHERE t.tenant = ? AND "
                    "(r.item_id IN (SELECT value FROM json_each(?)) "
                    "OR substr(r.item_id, 1, ?) = ?)",
                    (tenant, ids, len(episode_id) + 1, f"{episode_id}-"),
                )
            ]
            calls = [
                r["id"]
                for r in self._db.execute(
                    "SELECT id, prompt, response FROM llm_log WHERE prompt != ? OR response != ?",
                    (ERASED, ERASED),
                )
                if quotes(r["prompt"]) or quotes(r["response"])
            ]
            pattern = f'%"episode_id": "{episode_id}"%'
            conversations = [
                r[0]
                for r in self._db.execute(
                    "SELECT DISTINCT c.id FROM messages m JOIN conversations c "
                    "ON c.id = m.conversation_id WHERE c.tenant = ? AND m.citations LIKE ?",
                    (tenant, pattern),
                )
            ]
            threads = [
                r[0]
                for r in self._db.execute(
                    "SELECT DISTINCT h.id FROM turns t JOIN threads h ON h.id = t.thread_id "
                    "WHERE h.tenant = ? AND t.citations LIKE ?",
                    (tenant, pattern),
                )
            ]
        return NoteTraces(turns, retrievals, calls, conversations, threads)

    def purge_note_traces(self, traces: NoteTraces) -> None:
        """Removes what ``note_traces`` found, in one transaction: the telemetry turns (their
        retrieval rows cascade), the retrieval rows of the note's chunks, and the prompt and
        response of each LLM log call (the row stays, so the log still shows that a call was
        made, when, by which model, and its token counts; only what it said about the note goes).
        Conversations and threads are the person's own and are left alone."""
        with self._tx() as db:
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
        """After a forget: checkpoints and truncates the WAL, which still holds the pages as they
        were before the delete. False when another process (a chat worker) held a read open and
        the WAL could not be reset; the next checkpoint overwrites it."""
        with self._lock:
            busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return not busy

    def query(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        """A read-only query, for tests and diagnostics."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()


def _conversation(row: sqlite3.Row) -> Conversation:
    return Conversation(
        row["id"], row["title"], row["persona"], row["created_at"], row["updated_at"], row["n"]
    )


def _message(row: sqlite3.Row) -> Message:
    return Message(
        row["id"],
        row["role"],
        row["text"],
        json.loads(row["citations"]),
        row["model"],
        row["latency_ms"],
        row["created_at"],
    )


def _turn(row: sqlite3.Row) -> Turn:
    return Turn(
        row["id"],
        row["thread_id"],
        row["role"],
        row["text"],
        json.loads(row["citations"]),
        row["state"],
        row["error"],
        row["seq"],
        row["created_at"],
        row["tenant"] or "",
    )

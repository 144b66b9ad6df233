"""The orchestrator's SQLite database: one connection, its transactions and the migrations.

Schema and migrations are in ``schema.sql``, one versioned list for every table. The stores built
on this class (``conversations.py``, ``turn_queue.py``, ``telemetry.py``; ``store.py`` joins them)
share its connection and its lock. Calls are synchronous and short; async callers run them with
``asyncio.to_thread``. Several processes (the service and chat workers) may share one database
file: every multi-row change is one transaction (``_tx``, BEGIN IMMEDIATE).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from memex.shared.errors import FailedPrecondition


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


class Database:
    """The connection to the orchestrator's one SQLite database, migrated when opened."""

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

    def query(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        """A read-only query, for tests and diagnostics."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()

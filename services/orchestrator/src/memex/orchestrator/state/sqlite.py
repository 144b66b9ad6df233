"""The orchestrator's state in one SQLite file: one connection under a lock, WAL, writers
serialised on ``BEGIN IMMEDIATE``, the schema version in ``user_version``."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memex.orchestrator.state.base import Connection, statements
from memex.shared.errors import FailedPrecondition


class SqliteEngine:
    """One SQLite connection under a lock; writers serialise on ``BEGIN IMMEDIATE``."""

    dialect = "sqlite"
    skip_locked = ""

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

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN IMMEDIATE ... COMMIT: one writer at a time, across processes too."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """The connection, in autocommit, under the lock."""
        with self._lock:
            yield self._db

    def serialize(self, db: Connection, name: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE already runs writers one at a time."""

    def notify(self, db: Connection, channel: str, payload: str) -> None:
        """Nothing: SQLite has no NOTIFY (``queue/events.py`` wakes this process's watchers)."""

    @property
    def listen_url(self) -> str | None:
        """None: nothing to LISTEN on."""
        return None

    def migrate(self, migrations: list[tuple[int, str]]) -> None:
        """The version is SQLite's ``user_version``."""
        with self.transaction() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            latest = migrations[-1][0] if migrations else 0
            if version > latest:
                raise FailedPrecondition(
                    f"{self.path} has schema version {version}, newer than this memex ({latest})"
                )
            for number, body in migrations:
                if number > version:
                    for statement in statements(body):
                        db.execute(statement)
                    db.execute(f"PRAGMA user_version = {number}")

    def version(self) -> int:
        """SQLite's ``user_version``."""
        with self.read() as db:
            return int(db.execute("PRAGMA user_version").fetchone()[0])

    def scrub(self) -> bool:
        """Checkpoints and truncates the WAL, which still holds the pages as they were before
        the delete. False when another process (a chat worker) held a read open and the WAL
        could not be reset; the next checkpoint overwrites it."""
        with self._lock:
            busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return not busy

    def close(self) -> None:
        """Closes the connection."""
        with self._lock:
            self._db.close()

"""The orchestrator's database: SQLite (one file) or PostgreSQL (several orchestrators and
workers on several machines), its transactions and the migrations.

Schema and migrations are in ``schema.sql``, one versioned list for both engines: each
``-- migration N`` block is SQL both understand, unless a ``-- migration N postgres`` block
follows it with PostgreSQL's spelling of the same change. The stores built on this class
(``conversations.py``, ``turn_queue.py``, ``telemetry.py``, ``traces.py``; ``store.py`` joins
them) write their SQL once, with ``?`` placeholders, and run it in ``_tx()`` (a write
transaction) or ``_read()``; the engine (``Engine``) is the only part that differs. Calls are
synchronous and short; async callers run them with ``asyncio.to_thread`` (on PostgreSQL too:
each call takes a connection from a pool, so calls from several threads run at once).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from memex.shared.errors import FailedPrecondition


def now_iso() -> str:
    """The current time as RFC 3339 UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A random, URL-safe id."""
    return uuid.uuid4().hex


def _migrations(dialect: str = "sqlite") -> list[tuple[int, str]]:
    """The versioned migrations as ``dialect`` ("sqlite" or "postgres") runs them, in order."""
    text = resources.files("memex.orchestrator").joinpath("schema.sql").read_text(encoding="utf-8")
    parts = re.split(r"^-- migration (\d+)( postgres)?$", text, flags=re.M)
    chosen: dict[int, str] = {}
    for number, variant, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if variant is None or dialect == "postgres":
            chosen[int(number)] = body
    return sorted(chosen.items())


def statements(body: str) -> list[str]:
    """A migration's statements: comments dropped, split on semicolons."""
    return [s for s in re.sub(r"--[^\n]*", "", body).split(";") if s.strip()]


class Row(Protocol):
    """A result row, read by column name or position."""

    def __getitem__(self, key: int | str, /) -> Any: ...


class Cursor(Protocol):
    """What the stores read back from a statement."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection inside one transaction (or one read), with ``?`` placeholders."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


class Engine(Protocol):
    """What differs between SQLite and PostgreSQL; the SQL of the stores does not."""

    dialect: str
    skip_locked: str
    """Appended to the queue's claim subquery: PostgreSQL's ``FOR UPDATE SKIP LOCKED``."""

    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction, committed when the block ends (rolled back if it raises)."""
        ...

    def read(self) -> AbstractContextManager[Connection]:
        """A connection for reads (and single statements for tests)."""
        ...

    def serialize(self, db: Connection, name: str) -> None:
        """Makes transactions that call this with the same ``name`` run one after another."""
        ...

    def migrate(self, migrations: list[tuple[int, str]]) -> None:
        """Applies the migrations newer than the database's version, each in a transaction."""
        ...

    def version(self) -> int:
        """The schema version of the database (the last migration applied)."""
        ...

    def scrub(self) -> bool:
        """After a forget: makes the deleted rows' old copies unreadable if the engine can."""
        ...

    def close(self) -> None:
        """Closes the connection(s)."""
        ...


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


class Database:
    """The orchestrator's one database, migrated when opened: SQLite at a path, or PostgreSQL
    at a ``postgresql://`` URL (``postgres.py``)."""

    def __init__(
        self, location: Path | str, *, pool_size: int = 8, connect_seconds: float = 10.0
    ) -> None:
        self._engine: Engine
        if isinstance(location, str):
            from memex.orchestrator.postgres import PostgresEngine  # psycopg only when used

            self._engine = PostgresEngine(
                location, pool_size=pool_size, connect_seconds=connect_seconds
            )
        else:
            self._engine = SqliteEngine(location)
        try:
            self._engine.migrate(_migrations(self._engine.dialect))
        except BaseException:
            self._engine.close()
            raise

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgres``."""
        return self._engine.dialect

    def close(self) -> None:
        """Closes the connection(s)."""
        self._engine.close()

    def schema_version(self) -> int:
        """The last migration applied to the database."""
        return self._engine.version()

    def _tx(self) -> AbstractContextManager[Connection]:
        return self._engine.transaction()

    def _read(self) -> AbstractContextManager[Connection]:
        return self._engine.read()

    def query(self, sql: str, *args: Any) -> list[Any]:
        """One statement and its rows (none for a write), for tests and diagnostics."""
        with self._read() as db:
            cursor = db.execute(sql, args)
            return cursor.fetchall() if getattr(cursor, "description", None) else []

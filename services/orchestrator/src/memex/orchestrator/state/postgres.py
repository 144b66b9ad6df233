"""The orchestrator's state on PostgreSQL: psycopg 3 with a pool of connections.

The stores' calls are synchronous (they run in ``asyncio.to_thread``, as on SQLite), so this
uses psycopg's synchronous API and ``psycopg_pool.ConnectionPool``: each call borrows a
connection for one transaction, and threads of one process, like processes on several machines,
run at once. The stores' SQL is shared with SQLite; this module turns its ``?`` placeholders
into psycopg's and reads rows by name or position, as ``sqlite3.Row`` does. The schema version
is kept in a table (``memex_schema``); migrations take an advisory lock, so orchestrators and
workers starting together migrate once.
"""

from __future__ import annotations

import functools
import logging
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from memex.orchestrator.state.base import Connection, Cursor, statements
from memex.shared.errors import FailedPrecondition, Unavailable

log = logging.getLogger(__name__)

CONNECT_SECONDS = 10.0
MIGRATION_LOCK = zlib.crc32(b"memex-orchestrator-migrations")


def where(url: str) -> str:
    """``host:port/database`` of a URL, for messages: never the user or the password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


class PgRow(tuple[Any, ...]):
    """A row readable by column name or position, like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            key = self._names[key]
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[PgRow]:
    names = {column.name: i for i, column in enumerate(cursor.description or [])}

    def make(values: Sequence[Any]) -> PgRow:
        row = PgRow(values)
        row._names = names
        return row

    return make


@functools.lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled). The stores' SQL has no
    ``?`` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A pooled psycopg connection that speaks the stores' ``?`` SQL."""

    def __init__(self, conn: psycopg.Connection[PgRow]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        """Runs one statement; its cursor holds the rows."""
        return self._conn.execute(_placeholders(sql), tuple(parameters))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Runs one statement per parameter set."""
        cursor = self._conn.cursor()
        cursor.executemany(_placeholders(sql), [tuple(p) for p in parameters])
        return cursor


class PostgresEngine:
    """A pool of connections to one PostgreSQL database; ``FOR UPDATE SKIP LOCKED`` claims."""

    dialect = "postgres"
    skip_locked = "FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, *, pool_size: int = 8, connect_seconds: float = 10.0) -> None:
        self.where = where(url)
        self._url = url
        self._pool: ConnectionPool[psycopg.Connection[PgRow]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(pool_size, 1),
            kwargs={"row_factory": _row_factory, "connect_timeout": max(int(connect_seconds), 1)},
            open=False,
            name="orchestrator-state",
        )
        try:
            self._pool.open(wait=True, timeout=connect_seconds)
        except PoolTimeout:
            self._pool.close()
            raise Unavailable(
                f"cannot reach the orchestrator's PostgreSQL at {self.where} within "
                f"{connect_seconds:g}s: is it running, and does MEMEX_ORCHESTRATOR_STATE_URL "
                "name the right host, port, database and user?"
            ) from None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction on a pooled connection (READ COMMITTED; the queue's claims lock
        their rows): committed when the block ends, rolled back if it raises."""
        try:
            with self._pool.connection() as conn:
                yield PgConnection(conn)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise Unavailable(
                f"the orchestrator's PostgreSQL at {self.where} failed: {_first_line(exc)}"
            ) from exc

    read = transaction  # a read is a transaction too: its statements see one snapshot each

    def serialize(self, db: Connection, name: str) -> None:
        """A transaction-scoped advisory lock named ``name``."""
        db.execute("SELECT pg_advisory_xact_lock(?)", (zlib.crc32(name.encode()),))

    def notify(self, db: Connection, channel: str, payload: str) -> None:
        """``pg_notify`` in ``db``'s transaction: delivered to listeners when it commits, and
        never if it rolls back."""
        db.execute("SELECT pg_notify(?, ?)", (channel, payload))

    @property
    def listen_url(self) -> str | None:
        """The database's URL, for a LISTEN connection of its own."""
        return self._url

    def migrate(self, migrations: list[tuple[int, str]]) -> None:
        """Under an advisory lock: reads the version, applies what is newer, one transaction
        (PostgreSQL's DDL is transactional, so a failed migration leaves nothing behind)."""
        with self.transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute("CREATE TABLE IF NOT EXISTS memex_schema (version INTEGER NOT NULL)")
            row = db.execute("SELECT MAX(version) FROM memex_schema").fetchone()
            version = int(row[0] or 0)
            latest = migrations[-1][0] if migrations else 0
            if version > latest:
                raise FailedPrecondition(
                    f"the orchestrator's PostgreSQL at {self.where} has schema version "
                    f"{version}, newer than this memex ({latest})"
                )
            for number, body in migrations:
                if number > version:
                    for statement in statements(body):
                        db.execute(statement)
                    db.execute("INSERT INTO memex_schema (version) VALUES (?)", (number,))

    def version(self) -> int:
        """The highest version in ``memex_schema``."""
        with self.read() as db:
            return int(db.execute("SELECT MAX(version) FROM memex_schema").fetchone()[0] or 0)

    def scrub(self) -> bool:
        """VACUUMs the tables a forget deletes from, so the deleted rows' space is marked for
        reuse. Weaker than SQLite's secure_delete: PostgreSQL does not zero the old tuples, which
        stay in the data files until overwritten (docs/orchestrator.md)."""
        try:
            timeout = int(CONNECT_SECONDS)
            with psycopg.connect(self._url, autocommit=True, connect_timeout=timeout) as conn:
                conn.execute(
                    "VACUUM telemetry_turns, telemetry_retrievals, llm_log, messages, "
                    "conversations, turns, threads, evidence"
                )
        except psycopg.Error as exc:
            log.warning("VACUUM after a forget failed: %s", _first_line(exc))
            return False
        return True

    def close(self) -> None:
        """Closes the pool."""
        self._pool.close()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]

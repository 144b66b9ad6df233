"""The orchestrator's state: SQLite (one file) or PostgreSQL (several orchestrators and workers
on several machines), its transactions and the migrations.

``base.py`` holds what both engines share (the protocols, the migrations of ``schema.sql``);
``sqlite.py`` and ``postgres.py`` are the engines, each importing only ``base``; this module picks
one (``open_engine``) and wraps it in the ``Database`` the stores build on
(``conversation/conversations.py``, ``queue/store.py``, ``record/telemetry.py``,
``memory/traces.py``; ``state/store.py`` joins them). The stores write their SQL once, with ``?``
placeholders, and run it in ``_tx()`` (a write transaction) or ``_read()``; the engine (``Engine``)
is the only part that differs. Calls are synchronous and short; async callers run them with
``asyncio.to_thread`` (on PostgreSQL too: each call takes a connection from a pool, so calls from
several threads run at once).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from memex.orchestrator.state.base import (
    Connection,
    Cursor,
    Engine,
    Row,
    migrations,
    new_id,
    now_iso,
    statements,
)
from memex.orchestrator.state.sqlite import SqliteEngine

__all__ = [
    "Connection",
    "Cursor",
    "Database",
    "Engine",
    "Row",
    "SqliteEngine",
    "migrations",
    "new_id",
    "now_iso",
    "open_engine",
    "statements",
]


def open_engine(
    location: Path | str, *, pool_size: int = 8, connect_seconds: float = 10.0
) -> Engine:
    """The engine for ``location``, not yet migrated: SQLite at a path, PostgreSQL at a
    ``postgresql://`` URL (``postgres.py``, imported here only, so psycopg loads only when used)."""
    if isinstance(location, str):
        from memex.orchestrator.state.postgres import PostgresEngine

        return PostgresEngine(location, pool_size=pool_size, connect_seconds=connect_seconds)
    return SqliteEngine(location)


class Database:
    """The orchestrator's one database, migrated when opened: SQLite at a path, or PostgreSQL
    at a ``postgresql://`` URL (``postgres.py``); the stores subclass it."""

    def __init__(
        self, location: Path | str, *, pool_size: int = 8, connect_seconds: float = 10.0
    ) -> None:
        self._engine = open_engine(location, pool_size=pool_size, connect_seconds=connect_seconds)
        try:
            self._engine.migrate(migrations(self._engine.dialect))
        except BaseException:
            self._engine.close()
            raise

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgres``."""
        return self._engine.dialect

    @property
    def listen_url(self) -> str | None:
        """Where to LISTEN for the engine's notifications (PostgreSQL); None on SQLite."""
        return self._engine.listen_url

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

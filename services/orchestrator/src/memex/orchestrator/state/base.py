"""What both engines of the orchestrator's state share: the protocols the stores and the engines
meet at (``Row``, ``Cursor``, ``Connection``, ``Engine``), the versioned migrations of
``schema.sql`` and how a migration splits into statements, and the ids and times the stores write.

Schema and migrations are in ``schema.sql``, one versioned list for both engines: each
``-- migration N`` block is SQL both understand, unless a ``-- migration N postgres`` block
follows it with PostgreSQL's spelling of the same change. This module imports neither engine;
``sqlite.py`` and ``postgres.py`` import it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Protocol


def now_iso() -> str:
    """The current time as RFC 3339 UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A random, URL-safe id."""
    return uuid.uuid4().hex


def migrations(dialect: str = "sqlite") -> list[tuple[int, str]]:
    """The versioned migrations as ``dialect`` ("sqlite" or "postgres") runs them, in order."""
    schema = resources.files("memex.orchestrator.state").joinpath("schema.sql")
    text = schema.read_text(encoding="utf-8")
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

    def notify(self, db: Connection, channel: str, payload: str) -> None:
        """Tells other processes, when ``db``'s transaction commits, that something on
        ``channel`` changed (PostgreSQL's NOTIFY; nothing on SQLite, one process's file)."""
        ...

    @property
    def listen_url(self) -> str | None:
        """Where a process LISTENs for ``notify`` (PostgreSQL's URL); None on SQLite."""
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

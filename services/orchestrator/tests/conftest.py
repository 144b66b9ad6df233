"""Fixtures: the orchestrator's state on each backend in turn (SQLite, then PostgreSQL), so one
contract suite runs against both, as retrieval's does for its two stores."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memex.orchestrator.state import Engine, SqliteEngine, migrations
from memex.orchestrator.state.postgres import PostgresEngine
from memex.shared.pgcluster import Cluster
from memex.testing import private_postgres


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the session (skipped, or failed under CI, when its
    binaries are missing: `make postgres`)."""
    with private_postgres() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> Iterator[str]:
    """A fresh, empty database of the session's cluster, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_cluster.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield postgres_cluster.url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(postgres_cluster.url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a store lives, on each backend in turn: a SQLite file or a PostgreSQL URL."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return tmp_path / "state.db"


def older_database(state: Path | str, below: int) -> Engine:
    """The database at ``state`` migrated only up to (not including) migration ``below``, as an
    older memex left it; the caller writes its old rows and closes it."""
    engine: Engine = SqliteEngine(state) if isinstance(state, Path) else PostgresEngine(state)
    engine.migrate([m for m in migrations(engine.dialect) if m[0] < below])
    return engine

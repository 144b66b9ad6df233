"""Per-tenant keyword indexes: one FTS5 table per tenant and kind (chunks, records).

BM25 weighs a word by how many documents of the index hold it. With one FTS5 table for every
tenant of a database file, a tenant's ranking moved when another tenant added notes; one table
per tenant keeps each tenant's statistics its own. The tables live in the same database and are
written in the same transactions as the rows they index, so they never disagree with the data.
A table's name is derived from a hash of the tenant (never from its text), so no tenant string
is ever spliced into SQL.
"""

from __future__ import annotations

import hashlib
import sqlite3

TOKENIZE = "porter unicode61 remove_diacritics 2"
_COLUMN = {"chunks": "search_text", "records": "text"}
# The single shared tables of schema version 1, migrated on open (see ``migrate_shared``).
_SHARED = {"chunks": "chunks_fts", "records": "records_fts"}


def table(tenant: str, kind: str) -> str:
    """The FTS5 table holding ``kind`` ("chunks" or "records") of ``tenant``."""
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:24]
    return f"{kind}_fts_{digest}"


def column(kind: str) -> str:
    """The indexed column of a ``kind`` table."""
    return _COLUMN[kind]


def exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the FTS5 table ``name`` exists (a tenant that never wrote has none)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def ensure(conn: sqlite3.Connection, tenant: str, kind: str) -> str:
    """Creates the tenant's table of ``kind`` if needed (inside the caller's transaction)."""
    name = table(tenant, kind)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5({_COLUMN[kind]}, "
        f"tokenize = '{TOKENIZE}')"
    )
    return name


def drop(conn: sqlite3.Connection, tenant: str) -> None:
    """Drops the tenant's keyword tables (inside the caller's transaction)."""
    for kind in _COLUMN:
        conn.execute(f"DROP TABLE IF EXISTS {table(tenant, kind)}")


def migrate_shared(conn: sqlite3.Connection) -> None:
    """Moves the rows of the shared FTS5 tables of schema version 1 into per-tenant tables, then
    drops the shared ones, in one transaction (an interrupted migration simply runs again)."""
    shared = [kind for kind, name in _SHARED.items() if exists(conn, name)]
    if not shared:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for kind in shared:
            source, col = _SHARED[kind], _COLUMN[kind]
            tenants = [r[0] for r in conn.execute(f"SELECT DISTINCT tenant FROM {kind}")]
            for tenant in tenants:
                # A shared table next to per-tenant ones means older code wrote to the store
                # after a migration: the shared table is the newer, so it wins.
                conn.execute(f"DROP TABLE IF EXISTS {table(tenant, kind)}")
                target = ensure(conn, tenant, kind)
                conn.execute(
                    f"INSERT INTO {target} (rowid, {col}) SELECT f.rowid, f.{col} "
                    f"FROM {source} f JOIN {kind} t ON t.rowid = f.rowid WHERE t.tenant = ?",
                    (tenant,),
                )
            conn.execute(f"DROP TABLE {source}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

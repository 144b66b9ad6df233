"""The embedded store's SQLite schema and the filter fragments its queries are built from.

SQLite is the source of truth (WAL, synchronous=FULL: a committed transaction survives a crash
or power cut). The FTS5 tables are the keyword index, one per tenant and kind (``keyword.py``),
written in the same transaction as the rows they index. Vectors are stored here too, as float32
blobs; the ANN index is derived from them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.keyword_terms import query_words

# 2: one keyword (FTS5) table per tenant and kind instead of one shared table (keyword.py).
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS notes (
  tenant TEXT NOT NULL, id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL,
  date TEXT NOT NULL, fingerprint TEXT NOT NULL, tags TEXT NOT NULL, record_keys TEXT NOT NULL,
  frontmatter TEXT NOT NULL, sensitive INTEGER NOT NULL, salience REAL NOT NULL,
  PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS notes_path ON notes (tenant, path);
CREATE TABLE IF NOT EXISTS note_keys (
  tenant TEXT NOT NULL, key TEXT NOT NULL, note_id TEXT NOT NULL,
  PRIMARY KEY (tenant, key, note_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS note_keys_note ON note_keys (tenant, note_id);
CREATE TABLE IF NOT EXISTS note_records (
  tenant TEXT NOT NULL, ref TEXT NOT NULL, note_id TEXT NOT NULL,
  PRIMARY KEY (tenant, ref, note_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS note_records_note ON note_records (tenant, note_id);
CREATE TABLE IF NOT EXISTS links (
  tenant TEXT NOT NULL, source_id TEXT NOT NULL, target_key TEXT NOT NULL,
  heading TEXT NOT NULL, alias TEXT NOT NULL, embed INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS links_source ON links (tenant, source_id);
CREATE INDEX IF NOT EXISTS links_target ON links (tenant, target_key);
CREATE TABLE IF NOT EXISTS chunks (
  rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT NULL, note_id TEXT NOT NULL,
  ordinal INTEGER NOT NULL, text TEXT NOT NULL, heading TEXT NOT NULL, start INTEGER NOT NULL,
  "end" INTEGER NOT NULL, vector BLOB NOT NULL, UNIQUE (tenant, id)
);
CREATE INDEX IF NOT EXISTS chunks_note ON chunks (tenant, note_id);
CREATE TABLE IF NOT EXISTS mentions (
  tenant TEXT NOT NULL, entity_id TEXT NOT NULL, chunk_id TEXT NOT NULL,
  PRIMARY KEY (tenant, entity_id, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_chunk ON mentions (tenant, chunk_id);
CREATE TABLE IF NOT EXISTS records (
  rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
  fields TEXT NOT NULL, text TEXT NOT NULL, date TEXT, tags TEXT NOT NULL,
  sensitive INTEGER NOT NULL, entity_refs TEXT NOT NULL, source TEXT NOT NULL, vector BLOB,
  UNIQUE (tenant, collection, id)
);
CREATE TABLE IF NOT EXISTS record_refs (
  tenant TEXT NOT NULL, entity_id TEXT NOT NULL, record_rowid INTEGER NOT NULL,
  PRIMARY KEY (tenant, entity_id, record_rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS record_refs_row ON record_refs (record_rowid);
CREATE TABLE IF NOT EXISTS meta (
  tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ann_generation (
  tenant TEXT NOT NULL, kind TEXT NOT NULL, generation INTEGER NOT NULL,
  PRIMARY KEY (tenant, kind)
) WITHOUT ROWID;
"""


def connect(path: str) -> sqlite3.Connection:
    """Opens the database in WAL mode with full fsync, creating the schema if needed."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA busy_timeout=10000")
    # Deleted rows are overwritten with zeros, not just unlinked: a forgotten note's text must
    # not stay readable in free pages of the file (docs/retrieval.md, "Forgetting a note").
    conn.execute("PRAGMA secure_delete=ON")
    conn.executescript(SCHEMA)
    keyword.migrate_shared(conn)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    return conn


def match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the query's words, each quoted, so user text can never be
    read as FTS syntax (operators, columns, prefixes). None when the query has no words."""
    words = [w.replace("_", " ") for w in query_words(query)]
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words)


def note_filter(flt: SearchFilter, alias: str = "n") -> tuple[str, list[Any]]:
    """SQL conditions on the notes table (alias ``n``) for a filter, with their parameters.
    Only fixed fragments are concatenated; every value is a bound parameter."""
    clauses, params = _common_conditions(flt, alias, date_guard="")
    if flt.note_ids is not None:
        clauses.append(f"{alias}.id IN (SELECT value FROM json_each(?))")
        params.append(_json_list(sorted(flt.note_ids)))
    return (" AND ".join(clauses) or "1"), params


def record_filter(flt: SearchFilter, alias: str = "r") -> tuple[str, list[Any]]:
    """SQL conditions on the records table for a filter (collections are required)."""
    collections = f"{alias}.collection IN (SELECT value FROM json_each(?))"
    clauses, params = _common_conditions(flt, alias, date_guard=f"{alias}.date IS NOT NULL AND ")
    return " AND ".join([collections, *clauses]), [_json_list(list(flt.collections)), *params]


def _common_conditions(
    flt: SearchFilter, alias: str, date_guard: str
) -> tuple[list[str], list[Any]]:
    """The conditions notes and records share: the date bounds (each after ``date_guard``), the
    sensitivity and the tags."""
    clauses: list[str] = []
    params: list[Any] = []
    if flt.date_from:
        clauses.append(f"{date_guard}{alias}.date >= ?")
        params.append(flt.date_from)
    if flt.date_to:
        clauses.append(f"{date_guard}{alias}.date <= ?")
        params.append(flt.date_to)
    if not flt.include_sensitive:
        clauses.append(f"{alias}.sensitive = 0")
    for tag in flt.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE value = ?)")
        params.append(tag)
    return clauses, params


def is_trivial(flt: SearchFilter) -> bool:
    """Whether a chunk filter lets every chunk of the tenant through."""
    return (
        not (flt.date_from or flt.date_to or flt.tags or flt.note_ids is not None)
        and flt.include_sensitive
    )


def _json_list(values: list[str]) -> str:
    import json

    return json.dumps(values)

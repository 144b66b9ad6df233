"""The embedded store's SQL for notes (worker thread only): writing a note with its chunks,
links, name keys, record keys and mentions, deleting notes, reading notes and chunks back, and
counting what is left of a note after a forget. See ``queries`` for the conventions.

Split from ``queries``, which keeps the row codecs and helpers these functions share.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import ChunkView, Note, NoteMeta
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.embedded.queries import (
    _CHUNK_VIEW,
    _NOTE_COLS,
    _bump,
    _chunk_view,
    _ids,
    _note_meta,
)


# -- notes ---------------------------------------------------------------------------------------
def _drop_note(conn: sqlite3.Connection, tenant: str, note_id: str) -> list[int]:
    rows = conn.execute(
        "SELECT rowid, id FROM chunks WHERE tenant = ? AND note_id = ?", (tenant, note_id)
    ).fetchall()
    old = [r[0] for r in rows]
    fts = keyword.table(tenant, "chunks")
    if old and keyword.exists(conn, fts):
        conn.executemany(f"DELETE FROM {fts} WHERE rowid = ?", [(r,) for r in old])
    conn.executemany(
        "DELETE FROM mentions WHERE tenant = ? AND chunk_id = ?", [(tenant, r[1]) for r in rows]
    )
    conn.execute("DELETE FROM chunks WHERE tenant = ? AND note_id = ?", (tenant, note_id))
    for table, column in (
        ("note_keys", "note_id"),
        ("note_records", "note_id"),
        ("links", "source_id"),
        ("notes", "id"),
    ):
        conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND {column} = ?", (tenant, note_id))
    return old


def replace_note(
    conn: sqlite3.Connection, tenant: str, note: Note, vectors: list[NDArray[np.float32]]
) -> tuple[list[int], list[int]]:
    """Replaces a note and everything derived from it; returns (old rowids, new rowids)."""
    old = _drop_note(conn, tenant, note.id)
    fts = keyword.ensure(conn, tenant, "chunks")
    conn.execute(
        "INSERT INTO notes (tenant, id, path, title, date, fingerprint, tags, record_keys, "
        "frontmatter, sensitive, salience) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tenant,
            note.id,
            note.path,
            note.title,
            note.date,
            note.fingerprint,
            json.dumps(list(note.tags)),
            json.dumps(list(note.record_keys)),
            json.dumps(dict(note.frontmatter), default=str),
            int(note.sensitive),
            note.salience,
        ),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO note_keys (tenant, key, note_id) VALUES (?, ?, ?)",
        [(tenant, key, note.id) for key in note.keys],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO note_records (tenant, ref, note_id) VALUES (?, ?, ?)",
        [(tenant, ref, note.id) for ref in note.record_keys],
    )
    conn.executemany(
        "INSERT INTO links (tenant, source_id, target_key, heading, alias, embed) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (tenant, note.id, ln.target_key, ln.heading, ln.alias, int(ln.embed))
            for ln in note.links
        ],
    )
    new: list[int] = []
    for chunk, vector in zip(note.chunks, vectors, strict=True):
        cur = conn.execute(
            'INSERT INTO chunks (tenant, id, note_id, ordinal, text, heading, start, "end", '
            "vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tenant,
                chunk.id,
                note.id,
                chunk.ordinal,
                chunk.text,
                chunk.heading,
                chunk.start,
                chunk.end,
                vector.tobytes(),
            ),
        )
        rowid = int(cur.lastrowid or 0)
        new.append(rowid)
        conn.execute(
            f"INSERT INTO {fts} (rowid, search_text) VALUES (?, ?)", (rowid, chunk.search_text)
        )
        conn.executemany(
            "INSERT OR IGNORE INTO mentions (tenant, entity_id, chunk_id) VALUES (?, ?, ?)",
            [(tenant, entity, chunk.id) for entity in chunk.mentions],
        )
    _bump(conn, tenant, "chunks")
    return old, new


def delete_notes(
    conn: sqlite3.Connection, tenant: str, note_ids: list[str]
) -> tuple[int, list[int]]:
    """Deletes notes; returns (how many existed, removed chunk rowids)."""
    count, old = 0, []
    for note_id in dict.fromkeys(note_ids):
        exists = conn.execute(
            "SELECT 1 FROM notes WHERE tenant = ? AND id = ?", (tenant, note_id)
        ).fetchone()
        count += bool(exists)
        old += _drop_note(conn, tenant, note_id)
    _bump(conn, tenant, "chunks")
    return count, old


# -- forgetting: what is left of a note (see Store.note_traces) -----------------------------------
def note_traces(
    conn: sqlite3.Connection, tenant: str, note_id: str, chunk_ids: list[str]
) -> tuple[dict[str, int], list[int]]:
    """Counts of every row kept for a note, and the rowids of its chunks (for the ANN check).
    Keyword rows include any row of the tenant's FTS table whose chunk is gone: the FTS table
    has no note column, so a row orphaned by an interrupted delete can only be found that way."""
    rowids = [
        int(r[0])
        for r in conn.execute(
            "SELECT rowid FROM chunks WHERE tenant = ? AND (note_id = ? OR id IN "
            "(SELECT value FROM json_each(?)))",
            (tenant, note_id, _ids(chunk_ids)),
        )
    ]

    def count(sql: str, *args: Any) -> int:
        return int(conn.execute(sql, args).fetchone()[0])

    table = keyword.table(tenant, "chunks")
    fts = orphans = 0
    if keyword.exists(conn, table):
        fts = count(
            f"SELECT COUNT(*) FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))",
            _ids(rowids),
        )
        orphans = count(
            f"SELECT COUNT(*) FROM {table} f WHERE NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.rowid = f.rowid AND c.tenant = ?)",
            tenant,
        )
    counts = {
        "notes": count("SELECT COUNT(*) FROM notes WHERE tenant = ? AND id = ?", tenant, note_id),
        "chunks": len(rowids),
        "keyword index rows": fts + orphans,
        "outgoing links": count(
            "SELECT COUNT(*) FROM links WHERE tenant = ? AND source_id = ?", tenant, note_id
        ),
        "entity mentions": count(
            "SELECT COUNT(*) FROM mentions WHERE tenant = ? AND chunk_id IN "
            "(SELECT value FROM json_each(?))",
            tenant,
            _ids(chunk_ids),
        ),
        "name keys": count(
            "SELECT COUNT(*) FROM note_keys WHERE tenant = ? AND note_id = ?", tenant, note_id
        ),
        "record links": count(
            "SELECT COUNT(*) FROM note_records WHERE tenant = ? AND note_id = ?", tenant, note_id
        ),
    }
    return counts, rowids


def chunk_count(conn: sqlite3.Connection, tenant: str) -> int:
    """How many chunks the tenant has (what its ANN index should hold)."""
    return int(
        conn.execute("SELECT COUNT(*) FROM chunks WHERE tenant = ?", (tenant,)).fetchone()[0]
    )


def fingerprints(conn: sqlite3.Connection, tenant: str) -> dict[str, tuple[str, str]]:
    """{path: (id, fingerprint)} of the tenant's notes."""
    rows = conn.execute("SELECT path, id, fingerprint FROM notes WHERE tenant = ?", (tenant,))
    return {r[0]: (r[1], r[2]) for r in rows}


def get_notes(conn: sqlite3.Connection, tenant: str, ids: list[str]) -> dict[str, NoteMeta]:
    """Note metadata by id."""
    rows = conn.execute(
        f"SELECT {_NOTE_COLS} FROM notes n WHERE n.tenant = ? "
        "AND n.id IN (SELECT value FROM json_each(?))",
        (tenant, _ids(ids)),
    )
    return {r[0]: _note_meta(r) for r in rows}


def notes_by_key(
    conn: sqlite3.Connection, tenant: str, keys: list[str]
) -> dict[str, list[NoteMeta]]:
    """Notes having each link key."""
    rows = conn.execute(
        f"SELECT k.key, {_NOTE_COLS} FROM note_keys k JOIN notes n "
        "ON n.tenant = k.tenant AND n.id = k.note_id WHERE k.tenant = ? "
        "AND k.key IN (SELECT value FROM json_each(?)) ORDER BY n.path",
        (tenant, _ids(keys)),
    )
    out: dict[str, list[NoteMeta]] = {}
    for r in rows:
        out.setdefault(r[0], []).append(_note_meta(r[1:]))
    return out


def notes_for_records(
    conn: sqlite3.Connection, tenant: str, refs: list[str]
) -> dict[str, NoteMeta]:
    """For each record ref, the note (smallest path) whose frontmatter names it."""
    rows = conn.execute(
        f"SELECT r.ref, {_NOTE_COLS} FROM note_records r JOIN notes n "
        "ON n.tenant = r.tenant AND n.id = r.note_id WHERE r.tenant = ? "
        "AND r.ref IN (SELECT value FROM json_each(?)) ORDER BY n.path DESC",
        (tenant, _ids(refs)),
    )
    return {r[0]: _note_meta(r[1:]) for r in rows}  # later (smaller) paths win


def linked_notes(conn: sqlite3.Connection, tenant: str, ids: list[str]) -> dict[str, set[str]]:
    """Wikilink neighbours of each note, both directions."""
    out: dict[str, set[str]] = {}
    for note_id in ids:
        if not conn.execute(
            "SELECT 1 FROM notes WHERE tenant = ? AND id = ?", (tenant, note_id)
        ).fetchone():
            continue
        rows = conn.execute(
            "SELECT k.note_id FROM links l JOIN note_keys k "
            "ON k.tenant = l.tenant AND k.key = l.target_key "
            "WHERE l.tenant = ? AND l.source_id = ? "
            "UNION SELECT l.source_id FROM note_keys k JOIN links l "
            "ON l.tenant = k.tenant AND l.target_key = k.key "
            "WHERE k.tenant = ? AND k.note_id = ?",
            (tenant, note_id, tenant, note_id),
        )
        out[note_id] = {r[0] for r in rows} - {note_id}
    return out


def get_chunks(conn: sqlite3.Connection, tenant: str, ids: list[str]) -> dict[str, ChunkView]:
    """Chunks with their notes' metadata."""
    rows = conn.execute(
        _CHUNK_VIEW + "WHERE c.tenant = ? AND c.id IN (SELECT value FROM json_each(?))",
        (tenant, _ids(ids)),
    )
    return {r[0]: _chunk_view(r) for r in rows}


def catalog_notes(conn: sqlite3.Connection, tenant: str) -> Iterator[NoteMeta]:
    """Every note of the tenant, to build the chunk catalogue."""
    rows = conn.execute(f"SELECT {_NOTE_COLS} FROM notes n WHERE n.tenant = ?", (tenant,))
    return (_note_meta(r) for r in rows)


def catalog_chunks(conn: sqlite3.Connection, tenant: str) -> list[tuple[int, str, str]]:
    """Every (chunk rowid, chunk id, note id) of the tenant, to build the chunk catalogue."""
    rows = conn.execute("SELECT rowid, id, note_id FROM chunks WHERE tenant = ?", (tenant,))
    return [(int(r[0]), r[1], r[2]) for r in rows]


def note_chunks(conn: sqlite3.Connection, tenant: str, note_id: str) -> list[ChunkView]:
    """One note's chunks in ordinal order."""
    rows = conn.execute(
        _CHUNK_VIEW + "WHERE c.tenant = ? AND c.note_id = ? ORDER BY c.ordinal, c.id",
        (tenant, note_id),
    )
    return [_chunk_view(r) for r in rows]


def set_mentions(conn: sqlite3.Connection, tenant: str, entity: str, chunk_ids: list[str]) -> None:
    """Replaces the chunks mentioning one entity (unknown chunks ignored)."""
    conn.execute("DELETE FROM mentions WHERE tenant = ? AND entity_id = ?", (tenant, entity))
    conn.execute(
        "INSERT OR IGNORE INTO mentions (tenant, entity_id, chunk_id) "
        "SELECT ?, ?, c.id FROM chunks c WHERE c.tenant = ? "
        "AND c.id IN (SELECT value FROM json_each(?))",
        (tenant, entity, tenant, _ids(chunk_ids)),
    )

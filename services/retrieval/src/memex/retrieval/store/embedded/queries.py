"""The embedded store's SQL, one function per operation (worker thread only).

Every statement is a constant with ``?`` parameters; the only composed parts are the fixed
filter fragments from ``schema``. Write functions run inside the caller's transaction and bump
the ANN generation of what they touch, so a saved ANN index is trusted only if nothing changed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import (
    ChunkView,
    Hit,
    Note,
    NoteMeta,
    Record,
    SearchFilter,
    StoreStats,
    shown_aliases,
)
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.embedded.schema import is_trivial, match_expression, note_filter

_NOTE_COLS = (
    "n.id, n.path, n.title, n.date, n.fingerprint, n.tags, n.sensitive, n.salience, n.record_keys, "
    # Both names, as a JSON array: only the aliases are read, not the whole frontmatter.
    "json_extract(n.frontmatter, '$.aliases', '$.alias')"
)
_RECORD_COLS = "collection, id, fields, text, date, tags, sensitive, entity_refs, source"


def _note_meta(row: Sequence[Any]) -> NoteMeta:
    return NoteMeta(
        id=row[0],
        path=row[1],
        title=row[2],
        date=row[3],
        fingerprint=row[4],
        tags=tuple(json.loads(row[5])),
        sensitive=bool(row[6]),
        salience=float(row[7]),
        record_keys=tuple(json.loads(row[8])),
        aliases=_aliases(row[2], row[9]),
    )


def _aliases(title: str, extracted: str | None) -> tuple[str, ...]:
    values = zip(("aliases", "alias"), json.loads(extracted) if extracted else (), strict=False)
    return shown_aliases(title, {name: value for name, value in values if value is not None})


def _record(row: Sequence[Any]) -> Record:
    return Record(
        collection=row[0],
        id=row[1],
        fields=json.loads(row[2]),
        text=row[3],
        date=row[4],
        tags=tuple(json.loads(row[5])),
        sensitive=bool(row[6]),
        entity_refs=tuple(json.loads(row[7])),
        source=row[8],
    )


def _ids(values: Sequence[Any]) -> str:
    return json.dumps(list(values))


def generation(conn: sqlite3.Connection, tenant: str, kind: str) -> int:
    """The tenant's write generation for ``kind`` (0 before any write)."""
    row = conn.execute(
        "SELECT generation FROM ann_generation WHERE tenant = ? AND kind = ?", (tenant, kind)
    ).fetchone()
    return int(row[0]) if row else 0


def _bump(conn: sqlite3.Connection, tenant: str, kind: str) -> None:
    conn.execute(
        "INSERT INTO ann_generation (tenant, kind, generation) VALUES (?, ?, 1) "
        "ON CONFLICT (tenant, kind) DO UPDATE SET generation = generation + 1",
        (tenant, kind),
    )


def all_vectors(
    conn: sqlite3.Connection, tenant: str, kind: str, dimension: int
) -> tuple[NDArray[np.uint64], NDArray[np.float32]]:
    """Every (rowid, vector) of the tenant's chunks or records, to rebuild an ANN index."""
    sql = (
        "SELECT rowid, vector FROM chunks WHERE tenant = ?"
        if kind == "chunks"
        else "SELECT rowid, vector FROM records WHERE tenant = ? AND vector IS NOT NULL"
    )
    rows = conn.execute(sql, (tenant,)).fetchall()
    keys = np.asarray([r[0] for r in rows], dtype=np.uint64)
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    return keys, vectors.reshape(len(rows), dimension)


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


_CHUNK_VIEW = (
    f'SELECT c.id, c.ordinal, c.text, c.heading, c.start, c."end", {_NOTE_COLS}, '
    "(SELECT json_group_array(m.entity_id) FROM mentions m "
    " WHERE m.tenant = c.tenant AND m.chunk_id = c.id) "
    "FROM chunks c JOIN notes n ON n.tenant = c.tenant AND n.id = c.note_id "
)


def _chunk_view(r: Sequence[Any]) -> ChunkView:
    return ChunkView(
        id=r[0],
        note=_note_meta(r[6:16]),
        ordinal=r[1],
        text=r[2],
        heading=r[3],
        start=r[4],
        end=r[5],
        mentions=tuple(sorted(json.loads(r[16]))),
    )


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


# -- search ---------------------------------------------------------------------------------------
def chunk_candidates(
    conn: sqlite3.Connection, tenant: str, flt: SearchFilter, keys: list[int] | None = None
) -> list[int]:
    """Rowids of the tenant's chunks passing a filter (among ``keys`` when given)."""
    if keys is not None:
        return list(passing_chunk_ids(conn, tenant, flt, keys))
    where, params = note_filter(flt)
    rows = conn.execute(
        "SELECT c.rowid FROM chunks c JOIN notes n ON n.tenant = c.tenant AND n.id = c.note_id "
        f"WHERE c.tenant = ? AND {where}",
        (tenant, *params),
    )
    return [r[0] for r in rows]


def passing_chunk_ids(
    conn: sqlite3.Connection, tenant: str, flt: SearchFilter, keys: list[int]
) -> dict[int, str]:
    """Chunk ids by rowid of those of ``keys`` that are the tenant's and pass the filter.

    CROSS JOIN fixes the loop order: each key is looked up by rowid. Left to itself, SQLite
    walked every chunk of the tenant and tested it against the keys (57 ms at 200k chunks for
    400 keys, against 5 ms this way)."""
    where, params = note_filter(flt)
    rows = conn.execute(
        "SELECT c.rowid, c.id FROM json_each(?) j CROSS JOIN chunks c ON c.rowid = j.value "
        "CROSS JOIN notes n ON n.tenant = c.tenant AND n.id = c.note_id "
        f"WHERE c.tenant = ? AND {where}",
        (_ids(keys), tenant, *params),
    )
    return {r[0]: r[1] for r in rows}


def chunk_ids(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    """Chunk ids by rowid."""
    rows = conn.execute(
        "SELECT rowid, id FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))",
        (_ids(rowids),),
    )
    return {r[0]: r[1] for r in rows}


def search_texts(conn: sqlite3.Connection, tenant: str) -> Iterator[tuple[int, str]]:
    """Every (chunk rowid, search text) of the tenant, from its FTS5 table (the text's only
    copy), to rebuild the keyword index."""
    table = keyword.table(tenant, "chunks")
    if keyword.exists(conn, table):
        yield from conn.execute(f"SELECT rowid, search_text FROM {table}")


def search_text_count(conn: sqlite3.Connection, tenant: str) -> int:
    """How many chunk search texts the tenant's FTS5 table holds."""
    table = keyword.table(tenant, "chunks")
    if not keyword.exists(conn, table):
        return 0
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def keyword_chunks(
    conn: sqlite3.Connection, tenant: str, query: str, k: int, flt: SearchFilter
) -> list[Hit]:
    """BM25 over the tenant's chunk search text with FTS5, best first, ties by chunk id (the
    store searches its keyword index instead: ``keyword_index.py``; this stays as the
    benchmark's reference and for checking that index against).

    The tenant's own FTS5 table is ranked alone first (FTS5's bm25() is negative, so it is
    negated): joining every matching row to its chunk and note, as a filter needs, costs more
    than the ranking itself. A filter is then applied to 4k of the best rows, which is enough
    for broad filters such as "no sensitive notes". When too few pass, or rows tied with the
    k-th fall beyond what was read, one joined query ranks exactly."""
    expression = match_expression(query)
    table = keyword.table(tenant, "chunks")
    if expression is None or k <= 0 or not keyword.exists(conn, table):
        return []
    trivial = is_trivial(flt)
    limit = (k if trivial else 4 * k) + 1
    scored = [
        (int(r[0]), float(r[1]))
        for r in conn.execute(
            f"SELECT rowid, -bm25({table}) AS s FROM {table} WHERE {table} MATCH ? "
            "ORDER BY s DESC LIMIT ?",
            (expression, limit),
        )
    ]
    kept = scored
    if not trivial and scored:
        ok = set(chunk_candidates(conn, tenant, flt, [key for key, _ in scored]))
        kept = [(key, s) for key, s in scored if key in ok]
    complete = len(scored) < limit or (len(kept) >= k and kept[k - 1][1] > scored[-1][1])
    if not complete:
        return _keyword_joined(conn, tenant, table, expression, k, flt)
    ids = chunk_ids(conn, [key for key, _ in kept])
    hits = [Hit(id=ids[key], score=s) for key, s in kept if key in ids]
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits[:k]


def _keyword_joined(
    conn: sqlite3.Connection, tenant: str, table: str, expression: str, k: int, flt: SearchFilter
) -> list[Hit]:
    """Every matching row joined to its chunk and note, filtered, ranked exactly."""
    where, params = note_filter(flt)
    rows = conn.execute(
        f"SELECT c.id, -bm25({table}) AS s FROM {table} "
        f"JOIN chunks c ON c.rowid = {table}.rowid "
        "JOIN notes n ON n.tenant = c.tenant AND n.id = c.note_id "
        f"WHERE {table} MATCH ? AND c.tenant = ? AND {where} ORDER BY s DESC, c.id LIMIT ?",
        (expression, tenant, *params, k),
    )
    return [Hit(id=r[0], score=float(r[1])) for r in rows]


def mentioning(
    conn: sqlite3.Connection, tenant: str, entities: list[str], k: int, flt: SearchFilter
) -> list[Hit]:
    """Chunks mentioning any of the entities, by how many they mention."""
    where, params = note_filter(flt)
    rows = conn.execute(
        "SELECT m.chunk_id, COUNT(DISTINCT m.entity_id) AS s FROM mentions m "
        "JOIN chunks c ON c.tenant = m.tenant AND c.id = m.chunk_id "
        "JOIN notes n ON n.tenant = c.tenant AND n.id = c.note_id "
        f"WHERE m.tenant = ? AND m.entity_id IN (SELECT value FROM json_each(?)) AND {where} "
        "GROUP BY m.chunk_id ORDER BY s DESC, MAX(n.date) DESC, m.chunk_id LIMIT ?",
        (tenant, _ids(entities), *params, k),
    )
    return [Hit(id=r[0], score=float(r[1])) for r in rows]


# -- metadata and housekeeping --------------------------------------------------------------------
def get_meta(conn: sqlite3.Connection, tenant: str, key: str) -> str | None:
    """A per-tenant value."""
    row = conn.execute(
        "SELECT value FROM meta WHERE tenant = ? AND key = ?", (tenant, key)
    ).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, tenant: str, key: str, value: str) -> None:
    """Sets a per-tenant value (autocommit: durable on return)."""
    conn.execute(
        "INSERT INTO meta (tenant, key, value) VALUES (?, ?, ?) "
        "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
        (tenant, key, value),
    )


def stats(conn: sqlite3.Connection, tenant: str) -> StoreStats:
    """Counts of the tenant's rows."""

    def count(table: str) -> int:
        return int(
            conn.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant = ?", (tenant,)).fetchone()[0]
        )

    return StoreStats(
        notes=count("notes"),
        chunks=count("chunks"),
        records=count("records"),
        links=count("links"),
        mentions=count("mentions"),
    )


def delete_tenant(conn: sqlite3.Connection, tenant: str) -> None:
    """Deletes every row of a tenant, its keyword tables included."""
    keyword.drop(conn, tenant)
    for table in (
        "notes",
        "note_keys",
        "note_records",
        "links",
        "chunks",
        "mentions",
        "records",
        "record_refs",
        "meta",
        "ann_generation",
    ):
        conn.execute(f"DELETE FROM {table} WHERE tenant = ?", (tenant,))

"""The embedded store's SQL behind chunk searches (worker thread only): the chunks passing a
filter, chunk ids by rowid, the search texts the keyword index is rebuilt from, FTS5 BM25 (the
reference the keyword index is checked against) and entity mentions. Record searches are in
``record_queries``; see ``queries`` for the conventions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from memex.retrieval.store.base import Hit, SearchFilter
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.embedded.queries import _ids
from memex.retrieval.store.embedded.schema import is_trivial, match_expression, note_filter


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

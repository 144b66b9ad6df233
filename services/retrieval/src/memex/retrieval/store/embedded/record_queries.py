"""The embedded store's SQL for records (worker thread only); see ``queries`` for conventions."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import Hit, Record, SearchFilter
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.embedded.queries import _RECORD_COLS, _bump, _ids, _record
from memex.retrieval.store.embedded.schema import match_expression, record_filter


# -- records --------------------------------------------------------------------------------------
def _drop_record(conn: sqlite3.Connection, tenant: str, collection: str, rid: str) -> int | None:
    row = conn.execute(
        "SELECT rowid, vector IS NOT NULL FROM records "
        "WHERE tenant = ? AND collection = ? AND id = ?",
        (tenant, collection, rid),
    ).fetchone()
    if row is None:
        return None
    fts = keyword.table(tenant, "records")
    if keyword.exists(conn, fts):
        conn.execute(f"DELETE FROM {fts} WHERE rowid = ?", (row[0],))
    conn.execute("DELETE FROM record_refs WHERE record_rowid = ?", (row[0],))
    conn.execute("DELETE FROM records WHERE rowid = ?", (row[0],))
    return int(row[0])


def upsert_records(
    conn: sqlite3.Connection,
    tenant: str,
    records: list[Record],
    vectors: list[NDArray[np.float32] | None],
) -> tuple[list[int], list[tuple[int, NDArray[np.float32]]]]:
    """Replaces records; returns (old rowids, [(new rowid, vector)] for records with vectors)."""
    old: list[int] = []
    added: list[tuple[int, NDArray[np.float32]]] = []
    fts = keyword.ensure(conn, tenant, "records")
    for record, vector in zip(records, vectors, strict=True):
        gone = _drop_record(conn, tenant, record.collection, record.id)
        if gone is not None:
            old.append(gone)
        cur = conn.execute(
            f"INSERT INTO records (tenant, {_RECORD_COLS}, vector) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tenant,
                record.collection,
                record.id,
                json.dumps(dict(record.fields), default=str),
                record.text,
                record.date,
                json.dumps(list(record.tags)),
                int(record.sensitive),
                json.dumps(list(record.entity_refs)),
                record.source,
                None if vector is None else vector.tobytes(),
            ),
        )
        rowid = int(cur.lastrowid or 0)
        conn.execute(f"INSERT INTO {fts} (rowid, text) VALUES (?, ?)", (rowid, record.text))
        conn.executemany(
            "INSERT OR IGNORE INTO record_refs (tenant, entity_id, record_rowid) VALUES (?, ?, ?)",
            [(tenant, ref, rowid) for ref in record.entity_refs],
        )
        if vector is not None:
            added.append((rowid, vector))
    _bump(conn, tenant, "records")
    return old, added


def delete_records(
    conn: sqlite3.Connection, tenant: str, collection: str, ids: list[str]
) -> tuple[int, list[int]]:
    """Deletes records; returns (how many existed, their rowids)."""
    old = [r for rid in dict.fromkeys(ids) if (r := _drop_record(conn, tenant, collection, rid))]
    _bump(conn, tenant, "records")
    return len(old), old


def record_sources(conn: sqlite3.Connection, tenant: str) -> dict[str, set[str]]:
    """{source: {collection:id}}."""
    out: dict[str, set[str]] = {}
    for source, collection, rid in conn.execute(
        "SELECT source, collection, id FROM records WHERE tenant = ?", (tenant,)
    ):
        out.setdefault(source, set()).add(f"{collection}:{rid}")
    return out


def get_records(conn: sqlite3.Connection, tenant: str, refs: list[str]) -> dict[str, Record]:
    """Records by collection:id."""
    pairs = [ref.split(":", 1) for ref in refs if ":" in ref]
    rows = conn.execute(
        f"SELECT {_RECORD_COLS} FROM records WHERE tenant = ? AND collection || ':' || id IN "
        "(SELECT value FROM json_each(?))",
        (tenant, _ids([f"{c}:{i}" for c, i in pairs])),
    )
    return {f"{r[0]}:{r[1]}": _record(r) for r in rows}


def collection_records(conn: sqlite3.Connection, tenant: str, collection: str) -> list[Record]:
    """Every record of one collection."""
    rows = conn.execute(
        f"SELECT {_RECORD_COLS} FROM records WHERE tenant = ? AND collection = ? ORDER BY id",
        (tenant, collection),
    )
    return [_record(r) for r in rows]


def records_about(conn: sqlite3.Connection, tenant: str, entity: str) -> list[Record]:
    """Records whose entity_refs name the entity."""
    rows = conn.execute(
        f"SELECT {_RECORD_COLS} FROM records WHERE rowid IN (SELECT record_rowid FROM "
        "record_refs WHERE tenant = ? AND entity_id = ?) ORDER BY collection, id",
        (tenant, entity),
    )
    return [_record(r) for r in rows]


def record_candidates(
    conn: sqlite3.Connection, tenant: str, flt: SearchFilter, keys: list[int] | None = None
) -> list[int]:
    """Rowids of records with vectors passing a filter (among ``keys`` when given)."""
    where, params = record_filter(flt)
    among, extra = (
        ("AND r.rowid IN (SELECT value FROM json_each(?))", [_ids(keys)])
        if (keys is not None)
        else ("", [])
    )
    rows = conn.execute(
        f"SELECT r.rowid FROM records r WHERE r.tenant = ? AND r.vector IS NOT NULL AND {where} "
        f"{among}",
        (tenant, *params, *extra),
    )
    return [r[0] for r in rows]


def record_refs_by_rowid(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    """collection:id by rowid."""
    rows = conn.execute(
        "SELECT rowid, collection || ':' || id FROM records "
        "WHERE rowid IN (SELECT value FROM json_each(?))",
        (_ids(rowids),),
    )
    return {r[0]: r[1] for r in rows}


def keyword_records(
    conn: sqlite3.Connection, tenant: str, query: str, k: int, flt: SearchFilter
) -> list[Hit]:
    """BM25 over the tenant's record text (its own FTS5 table: its own statistics)."""
    expression = match_expression(query)
    fts = keyword.table(tenant, "records")
    if expression is None or not keyword.exists(conn, fts):
        return []
    where, params = record_filter(flt)
    rows = conn.execute(
        f"SELECT r.collection || ':' || r.id AS ref, -bm25({fts}) AS s FROM {fts} "
        f"JOIN records r ON r.rowid = {fts}.rowid "
        f"WHERE {fts} MATCH ? AND r.tenant = ? AND {where} ORDER BY s DESC, ref LIMIT ?",
        (expression, tenant, *params, k),
    )
    return [Hit(id=r[0], score=float(r[1])) for r in rows]

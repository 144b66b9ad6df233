"""The embedded store's SQL: what its SQL modules share, and the per-tenant metadata and
housekeeping (worker thread only).

Every statement is a constant with ``?`` parameters; the only composed parts are the fixed
filter fragments from ``schema``. Write functions run inside the caller's transaction and bump
the ANN generation of what they touch, so a saved ANN index is trusted only if nothing changed.

Here: the column lists and row decoders (notes, records, chunk views), id lists as JSON, the ANN
generations, and metadata, stats, merging the keyword tables and deleting a tenant. The SQL for
notes and chunks is in ``note_queries``, for records in ``record_queries``, for chunk searches in
``search_queries``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import ChunkView, NoteMeta, Record
from memex.retrieval.store.counts import StoreStats
from memex.retrieval.store.embedded import keyword
from memex.retrieval.store.links import shown_aliases

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


def optimize(conn: sqlite3.Connection, tenant: str) -> None:
    """Merges the tenant's FTS5 keyword tables whole ("optimize"), so no older index segment
    keeps the terms of a deleted row."""
    for kind in ("chunks", "records"):
        table = keyword.table(tenant, kind)
        if keyword.exists(conn, table):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")


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

"""Embedded-backend specifics: the ANN index is derived data, repaired from SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import EmbeddedStore, keyword
from memex.retrieval.testing import DIM, axis, note
from memex.shared.errors import FailedPrecondition, InvalidArgument


async def _filled(path: Path) -> list[str]:
    store = await EmbeddedStore.open(path, DIM)
    ids = []
    for i in range(6):
        n = note(f"N{i}", [(f"text {i}", axis(i))])
        await store.upsert_note("t", n)
        ids.append(n.chunks[0].id)
    await store.close()
    return ids


@pytest.mark.parametrize("damage", ["torn", "stale", "missing"])
async def test_a_damaged_ann_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    ids = await _filled(tmp_path)
    index_file = next((tmp_path / "ann").glob("*-chunks.usearch"))
    if damage == "torn":
        index_file.write_bytes(index_file.read_bytes()[:100])
    elif damage == "missing":
        index_file.unlink()
    else:  # a write the saved index never saw, as after kill -9
        store = await EmbeddedStore.open(tmp_path, DIM)
        await store._run(
            lambda: store._conn.execute("UPDATE ann_generation SET generation = generation + 1")
        )
        await store._run(lambda: store._conn.execute("DELETE FROM chunks WHERE id = ?", (ids[0],)))
        store._closed = True  # simulate dying without saving
        store._pool.shutdown()
        ids = ids[1:]
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        for i, chunk_id in enumerate(ids):
            hits = await store.search_chunks_vector(
                "t", axis(i + (damage == "stale")), 1, SearchFilter()
            )
            assert [h.id for h in hits] == [chunk_id]
    finally:
        await store.close()


async def test_dimension_is_checked(tmp_path: Path) -> None:
    await _filled(tmp_path)
    with pytest.raises(FailedPrecondition, match="8-dimensional"):
        await EmbeddedStore.open(tmp_path, 16)
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        with pytest.raises(InvalidArgument, match="dimensions"):
            await store.search_chunks_vector("t", [1.0, 0.0], 1, SearchFilter())
    finally:
        await store.close()


async def test_a_shared_keyword_table_of_schema_1_is_split_per_tenant(tmp_path: Path) -> None:
    """Stores written before keyword tables were per tenant had one ``chunks_fts`` for every
    tenant; opening one moves each tenant's rows into its own table and drops the shared one."""
    store = await EmbeddedStore.open(tmp_path, DIM)
    for tenant, words in (("a", "boat harbour"), ("b", "harbour log")):
        await store.upsert_note(tenant, note(f"{tenant} note", [(words, axis(0))]))
    expected = {t: await store.search_chunks_keyword(t, "harbour", 5, SearchFilter()) for t in "ab"}

    def to_schema_1() -> None:
        conn = store._conn
        conn.execute(
            "CREATE VIRTUAL TABLE chunks_fts USING fts5(search_text, "
            f"tokenize = '{keyword.TOKENIZE}')"
        )
        for tenant in "ab":
            table = keyword.table(tenant, "chunks")
            conn.execute(
                f"INSERT INTO chunks_fts (rowid, search_text) SELECT rowid, search_text FROM {table}"
            )
            conn.execute(f"DROP TABLE {table}")

    await store._run(to_schema_1)
    await store.close()
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        assert not await store._run(lambda: keyword.exists(store._conn, "chunks_fts"))
        for tenant in "ab":
            assert (
                await store.search_chunks_keyword(tenant, "harbour", 5, SearchFilter())
                == (expected[tenant])
            )
    finally:
        await store.close()

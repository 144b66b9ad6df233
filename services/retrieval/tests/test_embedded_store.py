"""Embedded-backend specifics: the ANN index is derived data, repaired from SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import EmbeddedStore
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

"""Embedded-backend specifics: the ANN index is derived data, repaired from SQLite."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.core import open_core
from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import EmbeddedStore, keyword
from memex.shared.errors import FailedPrecondition, InvalidArgument
from memex.testing.retrieval import DIM, axis, note


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


@pytest.mark.parametrize("damage", ["torn", "stale", "missing"])
async def test_a_damaged_keyword_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    """The keyword index (tantivy) is derived from SQLite like the ANN index: a sidecar that no
    longer names the database's generation, or a broken or missing index, means a rebuild."""
    ids = await _filled(tmp_path)
    folder = next((tmp_path / "keyword").glob("*-chunks"))
    if damage == "torn":
        (folder / "meta.json").write_text("{")
    elif damage == "missing":
        shutil.rmtree(folder)
    else:  # a write the index never saw, as after kill -9 between the commit and the index
        store = await EmbeddedStore.open(tmp_path, DIM)
        await store.delete_notes("t", [ids[0].split("#")[0]])
        await store.close()
        sidecar = folder.with_suffix(".json")
        saved = json.loads(sidecar.read_text())
        await store_text(tmp_path, "text 0")
        sidecar.write_text(json.dumps({"generation": saved["generation"] - 1}))
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        for i, chunk_id in enumerate(ids):
            hits = await store.search_chunks_keyword("t", f"text {i}", 6, SearchFilter())
            assert hits[0].id == chunk_id or (damage == "stale" and i == 0)
            assert len(hits) == 6 - (damage == "stale")  # "text" is in every chunk left
    finally:
        await store.close()


async def store_text(path: Path, text: str) -> None:
    """Adds a chunk with ``text`` to the keyword index behind SQLite's back (stale index)."""
    from memex.retrieval.store.embedded.keyword_index import KeywordIndex

    index = KeywordIndex(next((path / "keyword").glob("*-chunks")))
    index.replace([], [(10_000, text)], generation=-1)
    index.close()


async def test_a_forgotten_note_leaves_no_term_in_the_keyword_index(tmp_path: Path) -> None:
    """Deleting marks a chunk deleted in its segment, where its words stay until a merge (a
    segment left with no live chunk is dropped at once); scrub (run by DeleteNote) rebuilds the
    index, so none of them is left."""
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        keep = note("Keep", [("ordinary harbour words", axis(0))])
        gone = note("Gone", [("zanzibar marmalade harbour", axis(1))])
        for n in (keep, gone):
            await store.upsert_note("t", n)

        def holds(word: str) -> bool:
            """Whether the index's term dictionary has the word (deleted chunks' included)."""
            index = store._indexes.keyword("t")._index
            assert index is not None
            return bool(index.searcher().doc_freq("text", word))

        assert await store.scrub("t")  # one segment now holds both notes
        assert holds("zanzibar")
        await store.delete_notes("t", [gone.id])
        assert await store.search_chunks_keyword("t", "zanzibar", 5, SearchFilter()) == []
        traces = await store.note_traces("t", gone.id, [gone.chunks[0].id])
        assert traces["keyword index rows"] == 0
        assert holds("zanzibar")  # deleted, not yet gone from the segment: why scrub rebuilds
        assert await store.scrub("t")
        assert not holds("zanzibar")
        hits = await store.search_chunks_keyword("t", "harbour", 5, SearchFilter())
        assert [h.id for h in hits] == [keep.chunks[0].id]
    finally:
        await store.close()


async def test_keyword_search_reads_further_when_the_best_chunks_are_filtered(
    tmp_path: Path,
) -> None:
    """The filter sees the k + 1 best chunks first; when sensitive notes fill them, the
    keyword channel ranks again, deeper, until k pass."""
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        for i in range(12):  # the best matches: "harbour" twice, in short chunks
            await store.upsert_note(
                "t", note(f"S{i}", [("harbour harbour", axis(0))], sensitive=True)
            )
        plain = [note(f"P{i}", [(f"harbour {'log ' * (i + 1)}", axis(1))]) for i in range(3)]
        for n in plain:
            await store.upsert_note("t", n)
        shown = SearchFilter(include_sensitive=False)
        hits = await store.search_chunks_keyword("t", "harbour", 2, shown)
        assert [h.id for h in hits] == [plain[0].chunks[0].id, plain[1].chunks[0].id]
        assert len(await store.search_chunks_keyword("t", "harbour", 20, SearchFilter())) == 15
    finally:
        await store.close()


async def test_warm_loads_what_the_first_search_would(tmp_path: Path) -> None:
    await _filled(tmp_path)
    store = await EmbeddedStore.open(tmp_path, DIM)
    try:
        indexes = store._indexes
        assert not indexes.catalogs and not indexes.keywords and not indexes.ann
        await store.warm("t")
        assert (
            "t" in indexes.catalogs and "t" in indexes.keywords and ("t", "chunks") in indexes.ann
        )
        assert len(indexes.catalog("t")) == 6
    finally:
        await store.close()


async def test_the_service_warms_the_default_tenant_as_it_starts(
    tmp_path: Path, embedding_addr: str
) -> None:
    settings = RetrievalSettings(
        port=0, embedding_addr=embedding_addr, store_dir=tmp_path / "store", default_tenant="me"
    )
    async with open_core(settings) as core:
        store = core.store
        assert isinstance(store, EmbeddedStore)
        for _ in range(200):
            if "me" in store._indexes.catalogs:
                break
            await asyncio.sleep(0.05)
        assert "me" in store._indexes.catalogs and "me" in store._indexes.keywords

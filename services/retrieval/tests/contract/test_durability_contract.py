"""Contract: acknowledged writes survive closing and reopening the store."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from memex.retrieval.store.base import SearchFilter, Store
from memex.testing.retrieval import axis, note, record


async def test_reopen_keeps_everything(
    store: Store,
    backend_open: Callable[[Path], AbstractAsyncContextManager[Store]],
    tmp_path: Path,
) -> None:
    n = note("Alpha", [("persistent apples", axis(0))])
    await store.upsert_note("t1", n)
    await store.upsert_records("t1", [record("entities", "a", "Alice", vector=axis(1))])
    await store.close()
    async with backend_open(tmp_path) as reopened:
        assert (await reopened.note_fingerprints("t1"))["Alpha.md"][0] == n.id
        hits = await reopened.search_chunks_vector("t1", axis(0), 5, SearchFilter())
        assert [h.id for h in hits] == [n.chunks[0].id]
        kw = await reopened.search_chunks_keyword("t1", "apples", 5, SearchFilter())
        assert [h.id for h in kw] == [n.chunks[0].id]
        assert "entities:a" in await reopened.get_records("t1", ["entities:a"])

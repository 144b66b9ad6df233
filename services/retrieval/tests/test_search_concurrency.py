"""The channels that need nothing from each other run at once: on a networked store (Weaviate)
each is a round trip, so a search waits for the slowest channel, not for their sum."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memex.retrieval.search import Query, Searcher, Tuning
from memex.retrieval.store.base import Hit, SearchFilter, Vector
from memex.retrieval.store.embedded import EmbeddedStore
from memex.testing.retrieval import DIM, FixedEmbedder, note, tuning, vec

QUERY = "apple banana"


class _Meeting(EmbeddedStore):
    """A store whose chunk vector and keyword searches each wait until the other has started:
    run one after the other, the first would wait for ever (the barrier times out)."""

    barrier: asyncio.Barrier | None = None

    async def _meet(self) -> None:
        if self.barrier is not None:
            await asyncio.wait_for(self.barrier.wait(), timeout=5)

    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        if flt.note_ids is None:  # the vector channel's own search, not the graph's
            await self._meet()
        return await super().search_chunks_vector(tenant, vector, k, flt)

    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        await self._meet()
        return await super().search_chunks_keyword(tenant, query, k, flt)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[_Meeting]:
    s = await _Meeting.open(tmp_path / "store", DIM)
    assert isinstance(s, _Meeting)
    for i in range(12):
        text = ["apple pie", "banana bread", "cherry tart"][i % 3] + f" number {i}"
        n = note(f"n{i:02d}", [(text, vec(1.0, i / 10, (i % 4) / 10))], date="2024-05-01")
        await s.upsert_note("t", dataclasses.replace(n, salience=0.5))
    yield s
    await s.close()


def _tuning() -> Tuning:
    return tuning(depth=20, default_k=5)


async def test_vector_and_keyword_channels_run_at_once(store: _Meeting) -> None:
    searcher = Searcher(store, FixedEmbedder(), _tuning())
    alone = await searcher.search(Query("t", QUERY))  # no barrier: the ranking to expect
    store.barrier = asyncio.Barrier(2)
    together = await searcher.search(Query("t", QUERY))
    assert [(i.id, i.score) for i in together.items] == [(i.id, i.score) for i in alone.items]
    assert together.items, "the search found nothing, so it proves nothing"


async def test_a_failing_channel_fails_the_search(store: _Meeting) -> None:
    """One channel's error is the search's error, not a partial result."""

    async def broken(tenant: str, query: str, k: int, flt: SearchFilter) -> list[Hit]:
        raise RuntimeError("keyword index unreadable")

    store.search_chunks_keyword = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="keyword index unreadable"):
        await Searcher(store, FixedEmbedder(), _tuning()).search(Query("t", QUERY))

"""Search fetches chunk texts only for the results it returns, and ranks exactly as it did when
every fused candidate was fetched whole (recency and salience adjustments included)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from memex.retrieval.fusion import fuse, recency_factor, salience_factor
from memex.retrieval.search import Query, Searcher, Tuning
from memex.retrieval.store.base import ChunkView
from memex.retrieval.store.embedded import EmbeddedStore
from memex.testing.retrieval import DIM, FixedEmbedder, note, tuning, vec

TODAY = dt.date(2024, 6, 1)
QUERY = "apple banana cherry"


class _Spy(EmbeddedStore):
    """Records the ids every ``get_chunks`` call asked for."""

    asked: list[list[str]]

    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        self.asked.append(list(chunk_ids))
        return await super().get_chunks(tenant, chunk_ids)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[_Spy]:
    s = await _Spy.open(tmp_path / "store", DIM)
    assert isinstance(s, _Spy)
    s.asked = []
    words = [*QUERY.split(), "date", "fig"]
    # 40 notes: vectors, words, dates and saliences all vary, so the vector and keyword orders,
    # the recency factor and the salience factor each move items around.
    for i in range(40):
        text = " ".join(words[j % len(words)] for j in range(i % 4, i % 4 + 1 + i % 3))
        n = note(
            f"n{i:02d}",
            [(text, vec(1.0, (i * 7 % 11) / 10, (i % 5) / 10)), (f"more {text}", vec(0.2, 1.0))],
            date=f"2024-0{1 + i % 5}-{1 + i % 27:02d}",
        )
        await s.upsert_note("t", dataclasses.replace(n, salience=(i * 3 % 10) / 10))
    yield s
    await s.close()


def _tuning() -> Tuning:
    return tuning(half_life_days=30, recency_weight=0.3, salience_weight=0.2)


async def _old_ranking(
    searcher: Searcher, store: EmbeddedStore, t: Tuning
) -> list[tuple[str, float, str, str, int, int]]:
    """The ranking as computed before: every fused candidate fetched whole, then adjusted."""
    vector = (await FixedEmbedder().embed([QUERY], "query"))[0]
    lists = await searcher.run_channels(Query("t", QUERY), ("vector", "keyword", "graph"), vector)
    fused, _ = fuse(lists, t.weights, t.fusion, t.rrf_k)
    views = await store.get_chunks("t", list(fused))
    scored = []
    for cid, view in views.items():
        recency = recency_factor(view.note.date, TODAY, t.half_life_days, t.recency_weight)
        score = fused[cid] * recency * salience_factor(view.note.salience, t.salience_weight)
        scored.append((cid, score, view.text, view.heading, view.start, view.end))
    return sorted(scored, key=lambda s: (-s[1], s[0]))


async def test_ranking_unchanged_and_only_the_top_k_are_hydrated(store: _Spy) -> None:
    t = _tuning()
    searcher = Searcher(store, FixedEmbedder(), t, today=lambda: TODAY)
    expected = await _old_ranking(searcher, store, t)
    assert len(expected) > 3 * t.default_k  # enough candidates for the test to mean something
    store.asked.clear()
    result = await searcher.search(Query("t", QUERY))
    got = [
        (i.id, i.score, i.text, i.heading, i.attributes["start"], i.attributes["end"])
        for i in result.items
    ]
    assert got == expected[: t.default_k]
    # The graph channel reads its few seed chunks; otherwise only the k results are fetched.
    assert max(len(ids) for ids in store.asked) <= t.default_k
    assert sorted(store.asked[-1]) == sorted(i.id for i in result.items)

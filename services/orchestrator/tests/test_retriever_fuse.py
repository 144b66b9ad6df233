"""Fusing the lists of an ask's searches (SPEC B1): retrieval fused its channels already, so one
search's list is not fused again; several searches' lists are, by Reciprocal Rank Fusion."""

from __future__ import annotations

import dataclasses

from memex.orchestrator.turn.pipeline import Retriever

from .fakes import NOTES, FakeMemory

DEPOSIT, BOILER, THERAPY, DANA = (
    dataclasses.replace(n, score=s) for n, s in zip(NOTES, (0.9, 0.5, 0.4, 0.2), strict=True)
)


def test_one_search_keeps_retrievals_order_and_scores() -> None:
    retriever = Retriever(FakeMemory(NOTES), rrf_k=60)
    assert retriever.fuse([[DEPOSIT, BOILER, THERAPY]]) == [DEPOSIT, BOILER, THERAPY]


def test_several_searches_are_fused_by_rank() -> None:
    retriever = Retriever(FakeMemory(NOTES), rrf_k=60)
    fused = retriever.fuse([[DEPOSIT, BOILER], [BOILER, DANA]])
    # BOILER is in both lists, so it leads; the rest keep the order they first appeared in.
    assert [i.item_id for i in fused] == ["c2", "c1", "entities:dana"]
    assert fused[0].score == 1 / 62 + 1 / 61
    assert retriever.fuse([]) == []

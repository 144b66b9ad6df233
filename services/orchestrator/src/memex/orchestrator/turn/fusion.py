"""Reciprocal Rank Fusion of several ranked lists into one (SPEC B1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memex.orchestrator.memory.items import ShownItem


def rrf(lists: Sequence[Sequence[ShownItem]], k: int = 60) -> list[ShownItem]:
    """One list, best first: each item scores the sum of 1 / (k + rank) over the lists it is in.
    Ties keep the order of first appearance."""
    scores: dict[str, float] = {}
    first: dict[str, ShownItem] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            scores[item.item_id] = scores.get(item.item_id, 0.0) + 1.0 / (k + rank)
            first.setdefault(item.item_id, item)
    order = sorted(scores, key=lambda item_id: -scores[item_id])
    return [replace(first[item_id], score=scores[item_id]) for item_id in order]

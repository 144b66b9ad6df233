"""The optional rerank stage of hybrid search (SPEC B5): rescore the fused top N with a model.

A ``Reranker`` gives one relevance score per (query, passage) pair; ``rerank_items``
interpolates the min-max-normalised model scores with the normalised fused scores of the same
items and reorders them. Engines live in ``rerank_onnx`` (a cross-encoder, or a stronger
bi-encoder used pointwise). No gRPC here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Protocol

from memex.retrieval import metrics
from memex.retrieval.ingest.chunking import search_text
from memex.retrieval.items import Item


class Reranker(Protocol):
    """Scores passages for a query; higher is more relevant. Must be safe to call from a
    worker thread (search runs it off the event loop)."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order."""


def _minmax(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    if high <= low:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def combine(fused: Sequence[float], model: Sequence[float], weight: float) -> list[float]:
    """``(1 - w) * minmax(fused) + w * minmax(model)`` over one list of candidates.

    Both are min-max normalised over the candidates because their scales are unrelated (an RRF
    sum, a logit, a cosine); ``weight`` 1 orders by the model alone, 0 keeps the fused order.
    """
    if len(fused) != len(model):
        raise ValueError(f"{len(model)} model scores for {len(fused)} candidates")
    if not fused:
        return []
    return [
        (1.0 - weight) * f + weight * m for f, m in zip(_minmax(fused), _minmax(model), strict=True)
    ]


def order(scores: Sequence[float]) -> list[int]:
    """Candidate positions by descending score; equal scores keep their incoming (fused) order,
    so a tie never reshuffles what fusion decided."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])


async def rerank_items(
    reranker: Reranker, text: str, head: list[Item], weight: float
) -> list[Item]:
    """Rescores the candidates with the reranker and reorders them; only items that passed
    the filters are candidates, so a rerank can never bring back a filtered item."""
    if not head:
        return head
    # A chunk is judged with its title and heading path, as it was embedded and indexed.
    passages = [
        search_text(i.title, i.heading, i.text, i.attributes.get("aliases", ()))
        if i.kind == "chunk"
        else i.text
        for i in head
    ]
    started = time.perf_counter()
    # The model is CPU-bound: off the event loop, so other requests keep being served.
    model = await asyncio.to_thread(reranker.score, text, passages)
    metrics.RERANK_SECONDS.observe(time.perf_counter() - started)
    combined = combine([i.score for i in head], model, weight)
    for item, value, raw in zip(head, combined, model, strict=True):
        item.rerank, item.score = raw, value
    return [head[p] for p in order(combined)]

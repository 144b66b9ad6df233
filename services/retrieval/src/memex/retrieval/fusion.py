"""Channel fusion (Reciprocal Rank Fusion or normalised-score convex fusion) and the
salience/recency adjustments (shared by every backend)."""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from memex.retrieval.store.base import Hit

Fusion = Literal["rrf", "minmax", "zscore"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "minmax", "zscore")


@dataclass(frozen=True)
class ChannelHit:
    """An item's place in one channel: 1-based rank and the channel's raw score."""

    channel: str
    rank: int
    score: float


def rrf(
    channels: Mapping[str, Sequence[Hit]], weights: Mapping[str, float], k: float
) -> tuple[dict[str, float], dict[str, list[ChannelHit]]]:
    """Fused scores ``sum_c w_c / (k + rank_c)`` and each item's per-channel ranks and scores."""
    fused: dict[str, float] = {}
    seen: dict[str, list[ChannelHit]] = {}
    for channel, hits in channels.items():
        weight = weights.get(channel, 1.0)
        for rank, hit in enumerate(hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight / (k + rank)
            seen.setdefault(hit.id, []).append(ChannelHit(channel, rank, hit.score))
    return fused, seen


def normalise(hits: Sequence[Hit], how: Literal["minmax", "zscore"]) -> list[float]:
    """Each hit's raw score mapped so the channel's lowest listed score is 0.

    ``minmax`` divides by the range (the best becomes 1); ``zscore`` divides by the standard
    deviation. Shifting so the lowest is 0 (rather than the mean, as a textbook z-score does) lets
    an item a channel did not list count as 0 there: at most as good as the channel's worst.
    A channel whose scores are all equal gives every hit 1 (it cannot tell them apart).
    """
    scores = [h.score for h in hits]
    if not scores:
        return []
    low = min(scores)
    spread = (max(scores) - low) if how == "minmax" else statistics.pstdev(scores)
    if spread <= 0:
        return [1.0] * len(scores)
    return [(s - low) / spread for s in scores]


def convex(
    channels: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    how: Literal["minmax", "zscore"],
) -> tuple[dict[str, float], dict[str, list[ChannelHit]]]:
    """Fused scores ``sum_c w_c * norm_c(score)`` (see ``normalise``) and each item's
    per-channel ranks and raw scores, as ``rrf`` returns them."""
    fused: dict[str, float] = {}
    seen: dict[str, list[ChannelHit]] = {}
    for channel, hits in channels.items():
        weight = weights.get(channel, 1.0)
        for rank, (hit, value) in enumerate(zip(hits, normalise(hits, how), strict=True), 1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight * value
            seen.setdefault(hit.id, []).append(ChannelHit(channel, rank, hit.score))
    return fused, seen


def fuse(
    channels: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    fusion: Fusion,
    rrf_k: float,
) -> tuple[dict[str, float], dict[str, list[ChannelHit]]]:
    """Fuses by the configured method: ``rrf`` (with ``rrf_k``), or convex ``minmax``/``zscore``."""
    if fusion == "rrf":
        return rrf(channels, weights, rrf_k)
    return convex(channels, weights, fusion)


def recency_factor(date: str | None, today: dt.date, half_life_days: float, weight: float) -> float:
    """``1 - w + w * 0.5 ** (age / half_life)``: 1 for today, tending to ``1 - w`` for old
    items; 1 when the item has no date or the adjustment is off."""
    if not date or half_life_days <= 0 or weight <= 0:
        return 1.0
    try:
        day = dt.date.fromisoformat(date[:10])
    except ValueError:
        return 1.0
    age = max((today - day).days, 0)
    return 1.0 - weight + weight * math.pow(0.5, age / half_life_days)


def salience_factor(salience: float, weight: float) -> float:
    """``1 + w * (2 * salience - 1)``: salience 0.5 is neutral, 1 lifts by w, 0 lowers by w."""
    return 1.0 + weight * (2.0 * min(max(salience, 0.0), 1.0) - 1.0)

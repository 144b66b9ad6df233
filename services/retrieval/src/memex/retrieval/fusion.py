"""Reciprocal Rank Fusion and the salience/recency adjustments (shared by every backend)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memex.retrieval.store.base import Hit


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

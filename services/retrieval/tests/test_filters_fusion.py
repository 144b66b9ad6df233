"""The record filter language and the fusion arithmetic."""

from __future__ import annotations

import datetime as dt

import pytest

from memex.retrieval.fusion import convex, fuse, normalise, recency_factor, rrf, salience_factor
from memex.retrieval.store.base import Condition, Hit, Record, Sort
from memex.retrieval.store.filters import apply_query, check_condition
from memex.shared.errors import InvalidArgument


def _r(rid: str, **fields: object) -> Record:
    return Record(collection="c", id=rid, fields=fields)


ROWS = [
    _r("a", n=3, s="Open", tags=["x"], d="2024-01-02"),
    _r("b", n=1, s="done", nested={"city": "Lisbon"}),
    _r("c", s="open", n="3"),
]


@pytest.mark.parametrize(
    ("condition", "ids"),
    [
        (Condition("n", "eq", 3), ["a"]),
        (Condition("n", "ne", 3), ["b", "c"]),
        (Condition("n", "gt", 1), ["a"]),  # "3" (a string) never orders against 1
        (Condition("s", "contains", "OPEN"), ["a", "c"]),
        (Condition("tags", "contains", "x"), ["a"]),
        (Condition("s", "in", ["done", "open"]), ["b", "c"]),
        (Condition("nested.city", "eq", "Lisbon"), ["b"]),
        (Condition("d", "gte", "2024-01-01"), ["a"]),
        (Condition("missing", "ne", 1), ["a", "b", "c"]),
    ],
)
def test_conditions(condition: Condition, ids: list[str]) -> None:
    assert [r.id for r in apply_query(ROWS, [check_condition(condition)], None, 10)] == ids


def test_sort_missing_last_and_limit() -> None:
    rows = apply_query(ROWS, [], Sort("n", descending=True), 10)
    assert [r.id for r in rows] == ["a", "b", "c"]  # numbers first, then strings
    assert [r.id for r in apply_query(ROWS, [], Sort("nested.city"), 1)] == ["b"]


@pytest.mark.parametrize("field", ["", "a b", "x;drop table", "1abc", "a..b", "__import__('os')"])
def test_bad_fields_are_refused(field: str) -> None:
    with pytest.raises(InvalidArgument):
        check_condition(Condition(field, "eq", 1))


def test_rrf_weights_and_ranks() -> None:
    fused, seen = rrf(
        {"vector": [Hit("a", 0.9), Hit("b", 0.8)], "keyword": [Hit("b", 5.0)]},
        {"vector": 1.0, "keyword": 2.0},
        60,
    )
    assert fused["b"] == pytest.approx(1 / 62 + 2 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert [(c.channel, c.rank) for c in seen["b"]] == [("vector", 2), ("keyword", 1)]


def test_normalise_minmax_and_zscore() -> None:
    hits = [Hit("a", 10.0), Hit("b", 6.0), Hit("c", 2.0)]
    assert normalise(hits, "minmax") == [1.0, 0.5, 0.0]
    std = (32 / 3) ** 0.5
    assert normalise(hits, "zscore") == pytest.approx([8 / std, 4 / std, 0.0])
    assert normalise([Hit("a", 0.3), Hit("b", 0.3)], "minmax") == [1.0, 1.0]
    assert normalise([], "zscore") == []


def test_convex_fusion_weights_normalised_scores_and_keeps_raw_ones() -> None:
    channels = {
        "vector": [Hit("a", 0.9), Hit("b", 0.7), Hit("c", 0.5)],
        "keyword": [Hit("c", 12.0), Hit("a", 4.0)],
    }
    fused, seen = convex(channels, {"vector": 1.0, "keyword": 2.0}, "minmax")
    assert fused == pytest.approx({"a": 1.0, "b": 0.5, "c": 2.0})
    assert [(c.channel, c.rank, c.score) for c in seen["a"]] == [
        ("vector", 1, 0.9),
        ("keyword", 2, 4.0),
    ]
    assert fuse(channels, {}, "rrf", 60)[0] == rrf(channels, {}, 60)[0]
    assert fuse(channels, {}, "zscore", 60)[0] == convex(channels, {}, "zscore")[0]


def test_adjustments() -> None:
    today = dt.date(2024, 1, 31)
    assert recency_factor("2024-01-31", today, 30, 0.2) == pytest.approx(1.0)
    assert recency_factor("2024-01-01", today, 30, 0.2) == pytest.approx(0.9)
    assert recency_factor(None, today, 30, 0.2) == 1.0
    assert recency_factor("2024-01-01", today, 0, 0.2) == 1.0
    assert salience_factor(0.5, 0.2) == 1.0
    assert salience_factor(1.0, 0.2) == pytest.approx(1.2)

"""Citation policing (SPEC B2, B10)."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.citations import grade, parse_citations, police
from memex.orchestrator.memory.items import ShownItem

SHOWN = [
    ShownItem(
        item_id="c1",
        episode_id="ep-1",
        ref="[[Warden retro]]",
        title="Warden retro",
        text="Shipped the auth refactor this week.\nFelt  slower than it should have been.",
    ),
    ShownItem(item_id="entities:p7", ref="entities:p7", kind="record", text="Dana Ruiz, landlord"),
]


@pytest.mark.parametrize(
    ("claimed", "quote", "expected"),
    [
        ("verbatim", "felt slower than it should", "verbatim"),
        ("verbatim", "it was fast", "paraphrase"),
        ("paraphrase", "SHIPPED   the auth\trefactor", "verbatim"),
        ("paraphrase", "the refactor dragged", "paraphrase"),
        ("inference", "nothing like this is written", "inference"),
        ("inference", "shipped the auth refactor", "inference"),
        ("verbatim", "", "paraphrase"),
    ],
)
def test_the_support_grading_table(claimed: str, quote: str, expected: str) -> None:
    assert grade(claimed, quote, SHOWN[0].text) == expected


def test_only_citations_of_shown_items_survive() -> None:
    entries = [
        {"episode": "ep-1", "quote": "Shipped the auth refactor", "support": "verbatim"},
        {"episode": "ep-999", "quote": "invented", "support": "verbatim"},
        {"ref": "[[Warden retro]]", "quote": "it dragged on", "support": "paraphrase"},
        {"ref": "entities:p7", "support": "inference"},
        {"ref": "[[Some other note]]"},
    ]
    citations, report = police(entries, SHOWN)
    assert [(c.item_id, c.support) for c in citations] == [
        ("c1", "verbatim"),
        ("c1", "paraphrase"),
        ("entities:p7", "inference"),
    ]
    assert {c.ref for c in citations} <= {item.ref for item in SHOWN}
    assert (report.cited, report.grounded, report.dropped) == (
        5,
        3,
        ("ep-999", "[[Some other note]]"),
    )
    assert report.score == pytest.approx(0.6)


def test_duplicate_citations_are_kept_once() -> None:
    entry = {"episode": "ep-1", "quote": "shipped", "support": "verbatim"}
    citations, _ = police([entry, dict(entry)], SHOWN)
    assert len(citations) == 1


@pytest.mark.parametrize(
    ("tail", "count"),
    [
        ('\n[{"episode": "ep-1", "quote": "x"}]', 1),
        ('\n```json\n[{"episode": "ep-1"}, {"episode": "ep-2"}]\n```\nHope that helps!', 2),
        ("\n[]", 0),
        ('\n[{"episode": "ep-1", "quote": ', 0),
        ("\nnone", 0),
        ('\n{"episode": "ep-1"}', 0),
        ('\n["ep-1", {"episode": "ep-1"}]', 1),
    ],
)
def test_citation_json_is_parsed_leniently(tail: str, count: int) -> None:
    assert len(parse_citations(tail)) == count

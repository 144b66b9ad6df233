"""The period a question names, read as a date window (``memory/periods.py``)."""

from __future__ import annotations

import datetime as dt

import pytest

from memex.orchestrator.memory.periods import named_period

TODAY = dt.date(2026, 12, 4)  # a Friday


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("What did I do on 19 July 2025?", ("2025-07-19", "2025-07-19")),
        ("What happened on July 19th, 2025?", ("2025-07-19", "2025-07-19")),
        ("Anything in the notes from 2026-02-24?", ("2026-02-24", "2026-02-24")),
        # Without a year: the latest such day or month that has begun.
        ("What did I do on 19th of July?", ("2026-07-19", "2026-07-19")),
        ("What did I do on 19 December?", ("2025-12-19", "2025-12-19")),
        ("What happened in March?", ("2026-03-01", "2026-03-31")),
        ("What did I do in May 2025?", ("2025-05-01", "2025-05-31")),
        ("What did I read in Sept 2025?", ("2025-09-01", "2025-09-30")),
        ("How many kilos did the plot give in 2025?", ("2025-01-01", "2025-12-31")),
        # Several periods: the span of them all; a year named once holds for the others.
        ("What changed between March and May 2025?", ("2025-03-01", "2025-05-31")),
        ("Anything from June to August?", ("2026-06-01", "2026-08-31")),
        ("What did I do yesterday?", ("2026-12-03", "2026-12-03")),
        ("What did I write last week?", ("2026-11-23", "2026-11-29")),
        ("Where was I last weekend?", ("2026-11-28", "2026-11-29")),
        ("How big a rise came out of last year's review?", ("2025-01-01", "2025-12-31")),
        ("What did I do two months ago?", ("2026-10-01", "2026-10-31")),
        ("What happened 3 weeks ago?", ("2026-11-09", "2026-11-15")),
        ("Who did I meet last Tuesday?", ("2026-12-01", "2026-12-01")),
        ("What did I eat last night?", ("2026-12-03", "2026-12-03")),
        ("What have I been up to lately?", ("2026-11-04", "2026-12-04")),
        # Seasons (the northern hemisphere's months) and Christmas; "winter 2025" starts in its
        # December. In December, "last summer" is the one just gone.
        ("What did I do last summer?", ("2026-06-01", "2026-08-31")),
        ("What happened in the summer of 2025?", ("2025-06-01", "2025-08-31")),
        ("How cold was winter 2025?", ("2025-12-01", "2026-02-28")),
        ("Where were we last Christmas?", ("2025-12-24", "2025-12-26")),
    ],
)
def test_a_named_period_is_read_as_its_dates(question: str, window: tuple[str, str]) -> None:
    period = named_period(question, TODAY)
    assert period is not None
    assert period.iso() == window


@pytest.mark.parametrize(
    "question",
    [
        "What does the allotment cost?",
        "I may go; will it march on?",  # verbs, not months
        "Which days am I in the office? Tuesdays.",  # a habit, not a day
        "What is on 31 February?",  # no such day
        "Call 0113 496 0000",  # not a year
        "Did I fall over the spring in the garden?",  # no season
        "How did the fall of Rome go in the book?",
        "By when did I want Christmas with Chi planned?",  # the Christmas to come: no window
    ],
)
def test_a_question_without_a_period_has_none(question: str) -> None:
    assert named_period(question, TODAY) is None


def test_a_season_in_july_is_the_latest_begun_and_last_is_the_latest_ended() -> None:
    july = dt.date(2026, 7, 10)
    this, last = named_period("this summer", july), named_period("last summer", july)
    assert this is not None and this.iso() == ("2026-06-01", "2026-08-31")
    assert last is not None and last.iso() == ("2025-06-01", "2025-08-31")

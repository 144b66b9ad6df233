"""The month and weekday names both date readers share, and the one reading of an as_of day and
of a since/until bound."""

from __future__ import annotations

import datetime as dt

import pytest

from memex.shared.dates import (
    MONTHS,
    WEEKDAY_ABBREVIATIONS,
    WEEKDAYS,
    optional_day,
    parse_as_of,
)
from memex.shared.errors import InvalidArgument


def test_months_by_full_and_short_name() -> None:
    assert (MONTHS["january"], MONTHS["sep"], MONTHS["sept"], MONTHS["may"]) == (1, 9, 9, 5)
    assert len(set(MONTHS.values())) == 12


def test_weekdays_count_from_monday() -> None:
    assert (WEEKDAYS["monday"], WEEKDAYS["sunday"]) == (0, 6)
    assert (WEEKDAY_ABBREVIATIONS["sat"], WEEKDAY_ABBREVIATIONS["tues"]) == (5, 1)


def test_an_as_of_day_is_a_past_iso_day_clamped_to_today() -> None:
    today = dt.date(2026, 5, 10)
    assert parse_as_of("2026-05-01", today) == dt.date(2026, 5, 1)
    assert parse_as_of(" 2026-05-10 ", today) == today
    # A day's grace for the asker's time zone reads as today; beyond it is refused.
    assert parse_as_of("2026-05-11", today, grace=dt.timedelta(days=1)) == today
    for bad, says in [
        ("2026-5-1", "YYYY-MM-DD"),
        ("May 1", "YYYY-MM-DD"),
        ("2026-05-01T00:00", "YYYY-MM-DD"),
        ("2026-05-11", "after today \\(2026-05-10\\)"),
    ]:
        with pytest.raises(InvalidArgument, match=says):
            parse_as_of(bad, today)
    with pytest.raises(InvalidArgument, match="after today"):
        parse_as_of("2026-05-12", today, grace=dt.timedelta(days=1))


def test_a_day_bound_is_an_iso_day_or_empty() -> None:
    assert optional_day("", "since") == ""
    assert optional_day("2026-05-01", "since") == "2026-05-01"
    with pytest.raises(InvalidArgument, match="until 'May 1' is not a date: write YYYY-MM-DD"):
        optional_day("May 1", "until")

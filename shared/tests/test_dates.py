"""The month and weekday names both date readers share."""

from __future__ import annotations

from memex.shared.dates import MONTHS, WEEKDAY_ABBREVIATIONS, WEEKDAYS


def test_months_by_full_and_short_name() -> None:
    assert (MONTHS["january"], MONTHS["sep"], MONTHS["sept"], MONTHS["may"]) == (1, 9, 9, 5)
    assert len(set(MONTHS.values())) == 12


def test_weekdays_count_from_monday() -> None:
    assert (WEEKDAYS["monday"], WEEKDAYS["sunday"]) == (0, 6)
    assert (WEEKDAY_ABBREVIATIONS["sat"], WEEKDAY_ABBREVIATIONS["tues"]) == (5, 1)

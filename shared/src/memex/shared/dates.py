"""Month and weekday names as people write them ("July", "Jul", "Sept"; "Saturday", "Sat"), for
reading dates in notes (retrieval) and periods in questions (the orchestrator). English only, from
the C locale's ``calendar`` names; the one reading of an ``as_of`` day (docs/as-of.md), and of a
``since``/``until`` bound."""

from __future__ import annotations

import calendar
import datetime as dt

from memex.shared.errors import InvalidArgument

MONTHS: dict[str, int] = {
    **{name.casefold(): n for n, name in enumerate(calendar.month_abbr) if name},
    **{name.casefold(): n for n, name in enumerate(calendar.month_name) if name},
    "sept": 9,
}
"""Month number (1-12) by full or short name, case-folded."""

WEEKDAYS: dict[str, int] = {name.casefold(): n for n, name in enumerate(calendar.day_name)}
"""Weekday number (Monday 0) by full name, case-folded."""

WEEKDAY_ABBREVIATIONS: dict[str, int] = {
    **{name.casefold(): n for n, name in enumerate(calendar.day_abbr)},
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}
"""Weekday number by short name ("sat", "tues"), case-folded."""


def parse_as_of(value: str, today: dt.date, grace: dt.timedelta = dt.timedelta(0)) -> dt.date:
    """The day an ``as_of`` names (YYYY-MM-DD), no later than ``today``: InvalidArgument for
    another form, or for a day more than ``grace`` after ``today`` (the orchestrator allows the
    asker's time zone a day ahead of UTC and reads that day as today; retrieval, which is sent
    the clamped day, allows none)."""
    value = value.strip()
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        day = None
    if day is None or len(value) != 10:
        raise InvalidArgument(f"as_of {value!r} is not a date: use YYYY-MM-DD")
    if day > today + grace:
        raise InvalidArgument(
            f"as_of {value} is after today ({today.isoformat()}): memory has no future; "
            "leave as_of out to read it as it stands now"
        )
    return min(day, today)


def optional_day(value: str, name: str) -> str:
    """A day bound called ``name`` (``since``, ``until``) as YYYY-MM-DD; "" when it is empty (no
    bound), InvalidArgument when it is not a date."""
    if not value:
        return ""
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise InvalidArgument(f"{name} {value!r} is not a date: write YYYY-MM-DD") from None

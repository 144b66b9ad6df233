"""Month and weekday names as people write them ("July", "Jul", "Sept"; "Saturday", "Sat"), for
reading dates in notes (retrieval) and periods in questions (the orchestrator). English only, from
the C locale's ``calendar`` names."""

from __future__ import annotations

import calendar

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

"""The period a question names ("on 19 July 2025", "last week", "in March"), as a date window.

A question about a day or a month is answered by the notes written then (a daily note is dated by
its name), yet nothing in "What did I do on 19 July?" matches "2025-07-19 — Open day" by words
or meaning. The ask adds a search restricted to the window to its plain one (``ask/asker.py``); this
module only reads the question, and knows no gRPC.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

from memex.shared.dates import MONTHS, WEEKDAYS

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_SEASON_MONTHS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASONS = "|".join(_SEASON_MONTHS)
_RECENT_DAYS = 30
_MONTH_LEADS = "in|during|since|between|from|to|until|till|and|last|this|early|mid|late"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
# Longest forms first: a span the day-and-month form took is not read again as a month.
_PATTERNS = (
    ("iso", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)\b")),
    ("day", re.compile(rf"\b{_DAY}(?: of)? {_MONTH}(?:,? {_YEAR})?\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH} {_DAY}(?:,? {_YEAR})?\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.I)),
    # A bare month name only after a word that makes it a time: "may" is also a verb.
    (
        "month",
        re.compile(
            rf"\b(?:{_MONTH_LEADS}) {_MONTH}\b",
            re.I,
        ),
    ),
    (
        "ago",
        re.compile(
            r"\b(?P<n>\d+|an?|one|two|three|four|five|six) (?P<unit>day|week|month|year)s? ago\b",
            re.I,
        ),
    ),
    (
        "relative",
        re.compile(r"\b(?P<which>last|this|past) (?P<unit>week(?:end)?|month|year)\b", re.I),
    ),
    (
        "named_day",
        re.compile(r"\b(?P<word>today|tonight|this morning|yesterday|last night)\b", re.I),
    ),
    # A season or Christmas only with a year or "last"/"this"/"the": "a spring", "did I fall",
    # and "Christmas with Chi" (the one coming) are no period.
    (
        "season",
        re.compile(
            rf"\b(?:(?P<which>last|this|the) )?(?P<season>{_SEASONS})(?:,? (?:of )?{_YEAR})?\b",
            re.I,
        ),
    ),
    (
        "christmas",
        re.compile(rf"\b(?:(?P<which>last) christmas|christmas,? {_YEAR})\b", re.I),
    ),
    ("recent", re.compile(r"\b(?:recently|lately)\b", re.I)),
    ("weekday", re.compile(rf"\b(?:last|on) {_WEEKDAY}\b(?!s)", re.I)),
    ("year", re.compile(rf"\b{_YEAR}\b")),
)


@dataclass(frozen=True)
class Period:
    """An inclusive window of dates."""

    since: dt.date
    until: dt.date

    def iso(self) -> tuple[str, str]:
        """The window as ``YYYY-MM-DD`` bounds."""
        return self.since.isoformat(), self.until.isoformat()


def named_period(question: str, today: dt.date) -> Period | None:
    """The window that spans every period ``question`` names, or None when it names none.
    A day or month without a year takes the year the question names ("between March and May
    2025"), else it is the latest such that has begun (on 4 December 2026, "in March" is March
    2026 and "on 19 December" is 19 December 2025)."""
    named_year = re.search(rf"\b{_YEAR}\b", question)
    year = named_year["year"] if named_year else None
    taken: list[tuple[int, int]] = []
    found: list[Period] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(question):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            period = _read(kind, match, today, year)
            if period is not None:
                taken.append(match.span())
                found.append(period)
    if not found:
        return None
    return Period(min(p.since for p in found), max(p.until for p in found))


def _read(kind: str, m: re.Match[str], today: dt.date, year: str | None) -> Period | None:
    try:
        if kind == "iso":
            day = dt.date(int(m["year"]), int(m["month"]), int(m["day"]))
            return Period(day, day)
        if kind == "day":
            return _day(int(m["day"]), MONTHS[m["month"].casefold()], m["year"] or year, today)
        if kind == "month":
            if m["month"] in ("may", "march"):  # "and may", "to march": verbs, unless capitalised
                return None
            month = MONTHS[m["month"].casefold()]
            return _month(month, m.groupdict().get("year") or year, today)
    except ValueError:  # 31 February, month 13
        return None
    if kind == "ago":
        count = _NUMBERS.get(m["n"].casefold()) or int(m["n"])
        return _ago(count, m["unit"].casefold(), today)
    if kind == "relative":
        return _relative(m["which"].casefold(), m["unit"].casefold(), today)
    if kind == "named_day":
        gone = m["word"].casefold() in ("yesterday", "last night")
        day = today - dt.timedelta(days=1 if gone else 0)
        return Period(day, day)
    if kind == "season":
        season, which = m["season"].casefold(), (m["which"] or "").casefold()
        # "a spring", "the fall of Rome", "fix the spring": no season without more to say so.
        if not m["year"] and (not which or (which == "the" and season in ("spring", "fall"))):
            return None
        start = _SEASON_MONTHS[season]
        return _latest(
            lambda y: Period(
                dt.date(y, start, 1), _month_end(y + start // 12, (start + 1) % 12 + 1)
            ),
            m["year"],
            which == "last",
            today,
        )
    if kind == "christmas":
        return _latest(
            lambda y: Period(dt.date(y, 12, 24), dt.date(y, 12, 26)),
            m["year"],
            (m["which"] or "").casefold() == "last",
            today,
        )
    if kind == "recent":
        return Period(today - dt.timedelta(days=_RECENT_DAYS), today)
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS[m["weekday"].casefold()]) % 7 or 7
        day = today - dt.timedelta(days=back)
        return Period(day, day)
    whole = int(m["year"])
    return Period(dt.date(whole, 1, 1), dt.date(whole, 12, 31))


def _latest(
    in_year: Callable[[int], Period], year: str | None, ended: bool, today: dt.date
) -> Period:
    """A yearly period: in the year named, else the latest that has begun (``ended``: that has
    ended; in December "last summer" and "this summer" are both the one just gone)."""
    if year:
        return in_year(int(year))
    period = in_year(today.year)
    if period.since > today or (ended and period.until >= today):
        period = in_year(today.year - 1)
    return period


def _day(day: int, month: int, year: str | None, today: dt.date) -> Period:
    if year:
        date = dt.date(int(year), month, day)
    else:
        date = dt.date(today.year, month, day)
        if date > today:
            date = dt.date(today.year - 1, month, day)
    return Period(date, date)


def _month(month: int, year: str | None, today: dt.date) -> Period:
    number = int(year) if year else today.year - (month > today.month)
    return Period(dt.date(number, month, 1), _month_end(number, month))


def _month_end(year: int, month: int) -> dt.date:
    return dt.date(year, month, calendar.monthrange(year, month)[1])


def _ago(count: int, unit: str, today: dt.date) -> Period | None:
    if unit == "day":
        day = today - dt.timedelta(days=count)
        return Period(day, day)
    if unit == "week":
        start = today - dt.timedelta(days=today.weekday() + 7 * count)
        return Period(start, start + dt.timedelta(days=6))
    if unit == "month":
        index = today.year * 12 + today.month - 1 - count
        return Period(
            dt.date(index // 12, index % 12 + 1, 1), _month_end(index // 12, index % 12 + 1)
        )
    return Period(dt.date(today.year - count, 1, 1), dt.date(today.year - count, 12, 31))


def _relative(which: str, unit: str, today: dt.date) -> Period:
    if which == "past":  # "the past week": the days up to today
        days = {"week": 7, "weekend": 3, "month": 31, "year": 366}[unit]
        return Period(today - dt.timedelta(days=days), today)
    back = 1 if which == "last" else 0
    if unit == "weekend":
        saturday = today - dt.timedelta(days=(today.weekday() - 5) % 7)
        if back and saturday >= today - dt.timedelta(days=1):
            saturday -= dt.timedelta(days=7)
        return Period(saturday, saturday + dt.timedelta(days=1))
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday() + 7 * back)
        return Period(monday, monday + dt.timedelta(days=6))
    if unit == "month":
        found = _ago(back, "month", today)
        assert found is not None
        return found
    return Period(dt.date(today.year - back, 1, 1), dt.date(today.year - back, 12, 31))

"""The day whose memory a request reads (docs/as-of.md): now, or the end of a past day.

An ask ``--as-of 2026-05-01`` answers from the memory as it stood then. The day is set once, at
the start of the request, and every stage under it reads it from here: the retrieval search
(``SearchRequest.as_of``), the briefing's "Today is ..." line and the named periods of a
question ("last month" is the month before that day). A context variable, like ``tenant_var``,
because the stages between the request and those reads do not otherwise carry the day.
"""

from __future__ import annotations

import contextvars
import datetime as dt

from memex.shared.dates import parse_as_of

as_of_var: contextvars.ContextVar[dt.date | None] = contextvars.ContextVar(
    "memex_as_of", default=None
)


def parse(value: str) -> dt.date | None:
    """The day an ``as_of`` names (None for ""); InvalidArgument for another form or a day after
    today (UTC, with a day's grace for the asker's time zone, read as today)."""
    if not value.strip():
        return None
    return parse_as_of(value, dt.datetime.now(dt.UTC).date(), grace=dt.timedelta(days=1))


def today() -> dt.date:
    """The request's day: its as_of, else today."""
    return as_of_var.get() or dt.date.today()


def wire() -> str:
    """The request's as_of as the retrieval service takes it ("" for now)."""
    day = as_of_var.get()
    return day.isoformat() if day is not None else ""

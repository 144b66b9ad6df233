"""The read policy (issue 11): one place decides what any memory read may return.

Every surface (HTTP, MCP, the CLI) reads memory only through the orchestrator, and every read
(search, records, timeline, inbox, note) passes through ``Scope.admits``: sensitive items only when
the request asked for them, the request's date window, tags and collections. Retrieval is asked to
filter too, so a page of k results fills up; the check here is what the surfaces can rely on,
whatever a retrieval store does. Which callers may ask for sensitive items is the surface's call
(an API-key grant, an MCP setting, the local CLI); this module sees only the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memex.orchestrator.memory.items import Note, Record, ShownItem
from memex.shared.dates import optional_day
from memex.shared.errors import InvalidArgument, PermissionDenied

MAX_K = 100
MAX_LIMIT = 1000
HOW_TO_ASK = (
    "ask again with include_sensitive: true (HTTP: a key granted sensitive reads, or loopback "
    "without a key; MCP: MEMEX_MCP_ALLOW_SENSITIVE=true; CLI: --include-sensitive)"
)

WITHHELD_REPLY = (
    "(An earlier reply here drew on sensitive notes; it is left out because this request did not "
    "ask for sensitive notes.)"
)


WITHHELD_READ = f"(This reply drew on sensitive notes. To see it, {HOW_TO_ASK}.)"
WITHHELD_HISTORY = (
    f"(The thread's earlier turns may have drawn on sensitive notes. To see them, {HOW_TO_ASK}.)"
)


def history_text(text: str, *, drew_on_sensitive: bool, include_sensitive: bool) -> str:
    """An earlier reply as the model may see it in a later turn's history: a reply that drew on
    sensitive notes is sensitive text, so a request that did not ask for them gets a placeholder
    (what was said must not reach the model by the back door of the history)."""
    return WITHHELD_REPLY if drew_on_sensitive and not include_sensitive else text


@dataclass(frozen=True)
class Scope:
    """What one read may return: the tenant it reads, and the request's filters."""

    tenant: str
    include_sensitive: bool = False
    since: str = ""
    until: str = ""
    tags: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()

    def admits(
        self, *, sensitive: bool, date: str, tags: Iterable[str], collection: str = ""
    ) -> bool:
        """Whether an item with these properties may be returned: the one policy check."""
        if sensitive and not self.include_sensitive:
            return False
        if (self.since or self.until) and not date:
            return False  # an undated item cannot be shown to lie in the window
        day = date[:10]
        if self.since and day < self.since:
            return False
        if self.until and day > self.until:
            return False
        if self.tags and not set(self.tags) <= {t.lstrip("#").casefold() for t in tags}:
            return False
        return not (self.collections and collection and collection not in self.collections)

    def items(self, items: Iterable[ShownItem], limit: int = 0) -> list[ShownItem]:
        """The items this scope admits, at most ``limit`` (0: all)."""
        kept = [
            i
            for i in items
            if self.admits(sensitive=i.sensitive, date=i.date, tags=i.tags, collection=i.collection)
        ]
        return kept[:limit] if limit else kept

    def records(self, records: Iterable[Record], limit: int = 0) -> list[Record]:
        """The records this scope admits, at most ``limit`` (0: all)."""
        kept = [
            r
            for r in records
            if self.admits(sensitive=r.sensitive, date=r.date, tags=r.tags, collection=r.collection)
        ]
        return kept[:limit] if limit else kept

    def entries(
        self, entries: Iterable[tuple[str, ShownItem]], limit: int = 0
    ) -> list[tuple[str, ShownItem]]:
        """Timeline entries this scope admits (by the entry's date), at most ``limit``."""
        kept = [
            (date, i)
            for date, i in entries
            if self.admits(sensitive=i.sensitive, date=date or i.date, tags=i.tags)
        ]
        return kept[:limit] if limit else kept

    def check_note(self, note: Note) -> Note:
        """The note, or PermissionDenied (saying how to ask) when it is sensitive and the
        request did not ask for sensitive items."""
        if note.sensitive and not self.include_sensitive:
            raise PermissionDenied(f"note {note.episode_id} is marked sensitive; {HOW_TO_ASK}")
        return note

    def check_record(self, record: Record, what: str) -> Record:
        """The record, or PermissionDenied when it is sensitive and not asked for."""
        if record.sensitive and not self.include_sensitive:
            raise PermissionDenied(f"{what} {record.id!r} is marked sensitive; {HOW_TO_ASK}")
        return record


def check_count(value: int, name: str, most: int) -> int:
    """``value`` when it lies in 0..most; else InvalidArgument naming the range."""
    if value < 0 or value > most:
        raise InvalidArgument(f"{name} must be between 0 and {most} (0: the default), got {value}")
    return value


def scope(
    tenant: str,
    *,
    include_sensitive: bool = False,
    since: str = "",
    until: str = "",
    tags: Sequence[str] = (),
    collections: Sequence[str] = (),
) -> Scope:
    """A validated scope: dates are YYYY-MM-DD and until is not before since
    (InvalidArgument saying what to fix otherwise)."""
    start, end = optional_day(since, "since"), optional_day(until, "until")
    if start and end and end < start:
        raise InvalidArgument(f"until ({end}) is before since ({start}): swap them or widen")
    clean_tags = tuple(t.strip().lstrip("#").casefold() for t in tags if t.strip())
    return Scope(
        tenant=tenant,
        include_sensitive=include_sensitive,
        since=start,
        until=end,
        tags=clean_tags,
        collections=tuple(c for c in collections if c),
    )

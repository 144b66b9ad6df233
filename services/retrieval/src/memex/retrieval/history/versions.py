"""The versions of notes and records memex has held, and when each held (docs/as-of.md).

Every tenant ``T`` has a shadow tenant ``T~history`` in the same store (no request can name it:
``~`` is not allowed in a tenant name). It holds:

* each *earlier* version of a note, as a note ``NOTE_ID@vN`` with chunks ``NOTE_ID@vN-I``,
  embedded with the tenant's model, without links, keys or record keys (wikilinks resolve among
  current notes only);
* each earlier version of a record, as a record ``ID@vN`` of its collection;
* the ledger: one record per version, the current one included, in the collections
  ``note_versions`` and ``record_versions``, saying when the version started to hold and when it
  stopped (ISO 8601 UTC).

A note version holds from its file's modification time (clamped to the run that indexed it) to
the modification time of the version that replaced it, or to the index run that found its file
gone. A record version holds from the write that made it to the write that replaced or deleted
it. A version is new only when the content changed: a new embedding model, a ``--full`` run or
new sensitivity rules re-embed a note without making a version.

Crash safety: an earlier version is archived, and the ledger closes it *and* opens its successor
in one write, before the current note or record is replaced. A run killed in between finds the
successor already open and archives nothing twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memex.retrieval.ingest.chunking import search_text
from memex.retrieval.store.base import (
    Chunk,
    ChunkView,
    Condition,
    MemoryReader,
    Note,
    NoteMeta,
    Record,
    Vector,
)

HISTORY_SUFFIX = "~history"
NOTE_LEDGER = "note_versions"
RECORD_LEDGER = "record_versions"
_VERSION_ID = re.compile(r"^(?P<of>.+)@v(?P<n>\d+)$")
_VERSION_CHUNK = re.compile(r"^(?P<note>[0-9a-f]+@v\d+)-\d+$")


def history_tenant(tenant: str) -> str:
    """The shadow tenant holding ``tenant``'s earlier versions and ledger."""
    return tenant + HISTORY_SUFFIX


def stamp(when: dt.datetime | float | None = None) -> str:
    """An instant as the ledger writes it (ISO 8601, UTC, whole seconds): now when None."""
    if when is None:
        when = dt.datetime.now(dt.UTC)
    elif isinstance(when, int | float):
        when = dt.datetime.fromtimestamp(when, dt.UTC)
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cutoff(as_of: dt.date) -> str:
    """The first instant after the day ``as_of`` (UTC), as a ledger stamp compares: a version
    holds at the end of that day when it started before this and had not stopped by it."""
    return stamp(dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), dt.UTC))


def version_id(of: str, number: int) -> str:
    """The id of version ``number`` of the note id or record id ``of``."""
    return f"{of}@v{number}"


def split_version(value: str) -> tuple[str, int] | None:
    """``(of, number)`` of a version id, or None for an id that names no version."""
    match = _VERSION_ID.match(value)
    return (match["of"], int(match["n"])) if match else None


def version_note_of_chunk(chunk_id: str) -> str | None:
    """The version note an archived chunk id belongs to, or None for a current chunk."""
    match = _VERSION_CHUNK.match(chunk_id)
    return match["note"] if match else None


def content_key(text: str) -> str:
    """What makes a note version new: its text (not the model, parser or rules)."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def record_content(record: Record) -> str:
    """What makes a record version new: its fields, date, tags and sensitivity."""
    body = json.dumps(
        [dict(record.fields), record.date, sorted(record.tags), record.sensitive],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(body.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Version:
    """One ledger entry: a version of a note or a record and when it held."""

    of: str
    """The note id, or the record's ``collection:id``."""
    number: int
    content: str
    valid_from: str
    valid_to: str | None = None
    path: str = ""
    """Notes only: the vault path."""

    @property
    def id(self) -> str:
        """The version's own id (``of@vN``): the archived note's or record ledger entry's."""
        return version_id(self.of, self.number)

    @property
    def current(self) -> bool:
        """Whether it still holds (the live note or record is this version)."""
        return self.valid_to is None

    def holds_at(self, end: str) -> bool:
        """Whether the version held at the instant just before ``end`` (a ``cutoff``)."""
        return self.valid_from < end and (self.valid_to is None or self.valid_to >= end)

    def as_record(self, collection: str) -> Record:
        """The ledger record of this version."""
        fields: dict[str, Any] = {
            "id": self.id,
            "of": self.of,
            "number": self.number,
            "content": self.content,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
        }
        if self.path:
            fields["path"] = self.path
        return Record(collection, self.id, fields, date=self.valid_from[:10], source="history")

    @staticmethod
    def from_record(record: Record) -> Version:
        """A ledger record read back."""
        f = record.fields
        return Version(
            of=str(f["of"]),
            number=int(f["number"]),
            content=str(f["content"]),
            valid_from=str(f["valid_from"]),
            valid_to=None if f.get("valid_to") is None else str(f["valid_to"]),
            path=str(f.get("path", "")),
        )


class Ledger:
    """One tenant's versions of notes or of records, as loaded from the history tenant."""

    def __init__(self, versions: Iterable[Version]) -> None:
        self._by_of: dict[str, list[Version]] = {}
        for version in sorted(versions, key=lambda v: (v.of, v.number)):
            self._by_of.setdefault(version.of, []).append(version)

    @staticmethod
    async def load(
        store: MemoryReader, tenant: str, collection: str, of: Sequence[str] | None = None
    ) -> Ledger:
        """The ledger of ``collection`` (``NOTE_LEDGER`` or ``RECORD_LEDGER``); with ``of``, only
        the versions of those notes or records."""
        conditions = [] if of is None else [Condition("of", "in", list(of))]
        if of is not None and not of:
            return Ledger(())
        rows = await store.query_records(
            history_tenant(tenant), collection, conditions, None, 10_000_000
        )
        return Ledger(Version.from_record(r) for r in rows)

    def versions(self, of: str) -> list[Version]:
        """Every version of one note or record, oldest first."""
        return list(self._by_of.get(of, ()))

    def current(self, of: str) -> Version | None:
        """The open version of one note or record, if the ledger has one."""
        versions = self._by_of.get(of)
        return versions[-1] if versions and versions[-1].current else None

    def next_number(self, of: str) -> int:
        """The number the next version of ``of`` gets."""
        versions = self._by_of.get(of)
        return versions[-1].number + 1 if versions else 1

    def all(self) -> list[Version]:
        """Every version in the ledger."""
        return [v for versions in self._by_of.values() for v in versions]

    def record(self, *versions: Version) -> None:
        """Takes written versions into this in-memory copy (a later version of the same number
        replaces the earlier)."""
        for version in versions:
            kept = [v for v in self._by_of.get(version.of, []) if v.number != version.number]
            self._by_of[version.of] = sorted([*kept, version], key=lambda v: v.number)


@dataclass(frozen=True)
class Change:
    """What writing one note or record version does to the ledger: the version closed (to be
    archived first, when there was one) and the version opened."""

    closed: Version | None
    opened: Version | None


def on_write(
    ledger: Ledger,
    of: str,
    content: str,
    started: str,
    *,
    now: str,
    fallback_from: str = "",
    path: str = "",
) -> Change:
    """The ledger change for writing ``content`` as the live version of ``of`` at ``started``
    (never later than ``now``).

    Nothing changes when the open version already has that content. ``fallback_from`` is when a
    live version without a ledger entry (indexed before versions were kept) is taken to have
    started; it is then archived as version 1."""
    started = min(started, now)
    open_version = ledger.current(of)
    if open_version is not None and open_version.content == content:
        return Change(None, None)
    number = ledger.next_number(of)
    if open_version is not None:
        closed: Version | None = replace(
            open_version, valid_to=max(started, open_version.valid_from)
        )
    elif fallback_from:
        closed = Version(of, number, "", min(fallback_from, started), started, path)
        number += 1
    else:
        closed = None
    start = max(started, closed.valid_to or started) if closed is not None else started
    return Change(closed, Version(of, number, content, start, None, path))


def on_remove(ledger: Ledger, of: str, *, now: str, fallback_from: str, path: str = "") -> Version:
    """The closed version for a note or record removed at ``now`` (the open version, or one
    made for a live version that has no entry)."""
    open_version = ledger.current(of)
    if open_version is not None:
        return replace(open_version, valid_to=max(now, open_version.valid_from))
    return Version(of, ledger.next_number(of), "", min(fallback_from, now), now, path)


def archived_note(
    meta: NoteMeta, views: Sequence[ChunkView], vectors: Sequence[Vector], vid: str
) -> Note:
    """The note version ``vid`` as the history tenant stores it: ``meta``'s note with ``views``'
    chunks under version ids, and no links, keys or record keys."""
    chunks = tuple(
        Chunk(
            id=f"{vid}-{view.ordinal}",
            note_id=vid,
            ordinal=view.ordinal,
            text=view.text,
            heading=view.heading,
            start=view.start,
            end=view.end,
            search_text=archive_text(meta, view),
            vector=vector,
            mentions=view.mentions,
        )
        for view, vector in zip(views, vectors, strict=True)
    )
    return Note(
        id=vid,
        path=meta.path,
        title=meta.title,
        date=meta.date,
        fingerprint=meta.fingerprint,
        tags=meta.tags,
        frontmatter={"aliases": list(meta.aliases)} if meta.aliases else {},
        sensitive=meta.sensitive,
        salience=meta.salience,
        chunks=chunks,
    )


def archive_text(meta: NoteMeta, view: ChunkView) -> str:
    """What an archived chunk is embedded and keyword-indexed as: what its live chunk was."""
    return search_text(meta.title, view.heading, view.text, meta.aliases)


def archived_record(record: Record, number: int) -> Record:
    """Version ``number`` of ``record`` as the history tenant stores it."""
    return replace(record, id=version_id(record.id, number), source="history")


def day_start(date: str) -> str:
    """The first instant of a ``YYYY-MM-DD`` day as a stamp; "" for no date."""
    return f"{date}T00:00:00Z" if date else ""

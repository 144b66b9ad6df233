"""GetNote: one note's metadata and its text, reassembled from the stored chunks; ListNotes: the
notes dated in a window (no gRPC)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memex.retrieval.history.versions import (
    NOTE_LEDGER,
    Ledger,
    Version,
    history_tenant,
    split_version,
)
from memex.retrieval.store.base import ChunkView, NoteMeta, Store
from memex.shared.dates import optional_day
from memex.shared.errors import InvalidArgument, NotFound


@dataclass(frozen=True)
class NoteText:
    """A note as a citation link shows it."""

    meta: NoteMeta
    text: str
    chunks: list[ChunkView]
    versions: list[Version] = field(default_factory=list)
    """Every kept version of the note, oldest first (``history``)."""


def assemble(chunks: Sequence[ChunkView]) -> str:
    """The note body from its chunks in order. Each chunk is ``body[start:end]``, so chunks are
    placed at their offsets: a gap the chunker skipped (whitespace, or a plugin's block such as a
    Dataview query, ``chunking.MACHINE_FENCES``) becomes newlines of the same length and an
    overlap is not repeated, which keeps every chunk's offsets valid."""
    out: list[str] = []
    length = 0
    for chunk in sorted(chunks, key=lambda c: (c.start, c.ordinal)):
        if chunk.start > length:
            out.append("\n" * (chunk.start - length))
            length = chunk.start
        skip = length - chunk.start
        if skip < len(chunk.text):
            out.append(chunk.text[skip:])
            length = chunk.start + len(chunk.text)
    return "".join(out)


async def get_note(store: Store, tenant: str, episode_id: str) -> NoteText:
    """The note with ``episode_id``, or the earlier version a version id (``NOTE_ID@vN``)
    names, with the note's kept versions; NotFound when the tenant has none."""
    if not episode_id.strip():
        raise InvalidArgument("episode_id is required: a citation's or provenance's episode_id")
    version = split_version(episode_id)
    where = tenant if version is None else history_tenant(tenant)
    meta = (await store.get_notes(where, [episode_id])).get(episode_id)
    if meta is None:
        raise NotFound(f"no note with episode_id {episode_id!r} (re-indexed or deleted?)")
    chunks = await store.note_chunks(where, episode_id)
    of = episode_id if version is None else version[0]
    versions = (await Ledger.load(store, tenant, NOTE_LEDGER, [of])).versions(of)
    return NoteText(meta=meta, text=assemble(chunks), chunks=chunks, versions=versions)


MAX_LIST = 1000
DEFAULT_LIST = 50


async def list_notes(
    store: Store, tenant: str, since: str = "", until: str = "", limit: int = 0
) -> list[NoteMeta]:
    """The notes dated ``since``..``until`` (inclusive, either may be empty), newest first (ties
    by path), at most ``limit`` (0: 50). InvalidArgument for a bad date, window or limit."""
    start, end = optional_day(since, "since"), optional_day(until, "until")
    if start and end and end < start:
        raise InvalidArgument(f"until ({end}) is before since ({start}): swap them or widen")
    if limit < 0 or limit > MAX_LIST:
        raise InvalidArgument(f"limit must be between 0 and {MAX_LIST} (0: {DEFAULT_LIST})")
    ids = [note_id for note_id, _ in (await store.note_fingerprints(tenant)).values()]
    metas = (await store.get_notes(tenant, ids)).values() if ids else []
    kept = [m for m in metas if (not start or m.date >= start) and (not end or m.date[:10] <= end)]
    kept.sort(key=lambda m: (m.date, m.path), reverse=True)
    return kept[: limit or DEFAULT_LIST]

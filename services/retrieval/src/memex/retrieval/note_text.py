"""GetNote: one note's metadata and its text, reassembled from the stored chunks (no gRPC)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memex.retrieval.store.base import ChunkView, NoteMeta, Store
from memex.shared.errors import InvalidArgument, NotFound


@dataclass(frozen=True)
class NoteText:
    """A note as a citation link shows it."""

    meta: NoteMeta
    text: str
    chunks: list[ChunkView]


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
    """The note with ``episode_id``; NotFound when the tenant has none."""
    if not episode_id.strip():
        raise InvalidArgument("episode_id is required: a citation's or provenance's episode_id")
    meta = (await store.get_notes(tenant, [episode_id])).get(episode_id)
    if meta is None:
        raise NotFound(f"no note with episode_id {episode_id!r} (re-indexed or deleted?)")
    chunks = await store.note_chunks(tenant, episode_id)
    return NoteText(meta=meta, text=assemble(chunks), chunks=chunks)

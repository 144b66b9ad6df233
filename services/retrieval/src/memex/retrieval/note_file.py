"""ReadNoteFile: the file behind an indexed voice memo or PDF, as the vault holds it now, so a
citation can play the memo from its time or open the PDF at its page (no gRPC)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memex.retrieval.ingest import tombstones
from memex.retrieval.note_text import get_note
from memex.retrieval.store.base import Store
from memex.shared.errors import FailedPrecondition, NotFound

PIECE_BYTES = 256 * 1024
# What a browser plays or shows inline; the rest of the documents memex reads (web pages, mail)
# are read as their text, which GetNote gives.
MEDIA_TYPES = {
    ".m4a": "audio/mp4",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".webm": "audio/webm",
    ".flac": "audio/flac",
    ".pdf": "application/pdf",
}


@dataclass(frozen=True)
class NoteFile:
    """Where a note's own file is, and what it is."""

    path: Path
    name: str
    content_type: str
    size: int


async def note_file(store: Store, tenant: str, episode_id: str) -> NoteFile:
    """The file the note ``episode_id`` was read from. NotFound for an unknown note or a file
    gone from the vault; FailedPrecondition for a note that has no such file to offer."""
    meta = (await get_note(store, tenant, episode_id)).meta
    relative = PurePosixPath(meta.path)
    media_type = MEDIA_TYPES.get(relative.suffix.lower())
    if media_type is None:
        raise FailedPrecondition(
            f"{meta.path} is not a voice memo or a PDF; its text is the note itself (GetNote)"
        )
    root = await store.get_meta(tenant, tombstones.VAULT_META)
    if not root:
        raise NotFound("this memory does not say which vault it indexed: run memex index again")
    path, size = await asyncio.to_thread(_locate, Path(root), relative)
    return NoteFile(path, relative.name, media_type, size)


def _locate(root: Path, relative: PurePosixPath) -> tuple[Path, int]:
    """The file's path under the vault and its size; NotFound where it is not there."""
    vault = root.resolve()
    path = (vault / relative).resolve()
    if not path.is_relative_to(vault):
        raise NotFound(f"{relative} is not inside the vault {vault}")
    try:
        return path, path.stat().st_size
    except OSError:
        raise NotFound(
            f"{relative} is no longer in the vault at {vault}: put it back or re-index"
        ) from None


async def pieces(file: NoteFile) -> AsyncIterator[bytes]:
    """The file's bytes in order, ``PIECE_BYTES`` at a time, read off the event loop."""
    with await asyncio.to_thread(file.path.open, "rb") as handle:
        while piece := await asyncio.to_thread(handle.read, PIECE_BYTES):
            yield piece

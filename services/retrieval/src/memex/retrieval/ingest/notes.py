"""Turning one note file into a store ``Note`` (parse, classify, chunk); no I/O, no embedding."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from memex.retrieval.ingest.chunking import (
    CHUNKER_VERSION,
    TextChunk,
    chunk_body,
    search_text,
    with_frontmatter,
)
from memex.retrieval.ingest.documents import is_document
from memex.retrieval.ingest.markdown import PARSER_VERSION, has_properties, note_date, parse_note
from memex.retrieval.store.base import Chunk, Note
from memex.retrieval.store.links import Link, frontmatter_aliases, link_key

# Characters that end or split a wikilink's target ([[a]b]], [[a|b]], [[a#b]]).
_LINK_BREAKING = re.compile(r"[\[\]|#]")


@dataclass(frozen=True)
class Sensitivity:
    """What makes a note sensitive (SPEC B3; configurable)."""

    tags: frozenset[str]
    folders: tuple[str, ...]

    def fingerprint(self) -> str:
        """Part of every note fingerprint, so changing the rules re-classifies notes."""
        return f"{sorted(self.tags)}|{list(self.folders)}"


@dataclass
class PreparedNote:
    """A parsed note waiting for its chunk vectors."""

    note: Note
    """With empty ``chunks``; ``with_vectors`` fills them."""
    pieces: list[TextChunk]
    texts: list[str]
    """What to embed, one per piece."""
    warnings: list[str]
    mentions: list[tuple[str, ...]]


def note_id(rel: str) -> str:
    """Stable id of the note at a vault path (a rename is a delete plus an add)."""
    return hashlib.sha256(f"note:{rel}".encode()).hexdigest()[:24]


def fingerprint(text: str, model_id: str, sensitivity: Sensitivity) -> str:
    """Changes whenever the note, the parser, the chunker, the embedding model or the rules
    change."""
    digest = hashlib.sha256()
    for part in (PARSER_VERSION, CHUNKER_VERSION, model_id, sensitivity.fingerprint(), text):
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def _salience(frontmatter: dict[str, Any]) -> float:
    for name in ("salience", "importance"):
        value = frontmatter.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            score = float(value) / 5 if value > 1 else float(value)
            return min(max(score, 0.0), 1.0)
    return 0.5


def _record_keys(frontmatter: dict[str, Any]) -> tuple[str, ...]:
    keys: list[str] = []
    for name in ("record", "records"):
        value = frontmatter.get(name)
        values = value if isinstance(value, list) else [value]
        keys += [str(v).strip() for v in values if isinstance(v, str) and ":" in v]
    for name in ("entity", "entity_id"):
        value = frontmatter.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            keys.append(f"entities:{str(value).strip()}")
    return tuple(dict.fromkeys(keys))


def prepare(
    rel: str,
    text: str,
    mtime: float,
    fp: str,
    sensitivity: Sensitivity,
    find_mentions: Callable[[str], tuple[str, ...]],
) -> PreparedNote:
    """Parses and chunks a note; chunk offsets are into the whole file text."""
    parsed = parse_note(text)
    fm = parsed.frontmatter
    warnings = [f"{rel}: {w}" for w in parsed.warnings]
    stem = PurePosixPath(rel).stem
    title = str(fm.get("title")).strip() if isinstance(fm.get("title"), str) else stem
    if not title or _LINK_BREAKING.search(title):
        title = stem  # a title is cited as [[title]]: it must read as one link
    date, date_warning = note_date(fm, mtime, stem)
    if date_warning:
        warnings.append(f"{rel}: {date_warning}")
    tags = tuple(parsed.tags)
    sensitive = (
        fm.get("sensitive") is True
        or str(fm.get("sensitive")).lower() == "true"
        or bool(set(tags) & sensitivity.tags)
        or any(rel.startswith(f.rstrip("/") + "/") for f in sensitivity.folders)
    )
    aliases = frontmatter_aliases(fm)
    keys = [link_key(title), link_key(stem), link_key(rel)] + [link_key(a) for a in aliases]
    nid = note_id(rel)
    pieces = [
        TextChunk(p.text, p.heading, p.start + parsed.body_offset, p.end + parsed.body_offset)
        for p in chunk_body(parsed.body, join_opening=not is_document(rel))
    ]
    if has_properties(fm):
        pieces = with_frontmatter(pieces, text, parsed.body_offset)
    note = Note(
        id=nid,
        path=rel,
        title=title,
        date=date,
        fingerprint=fp,
        tags=tags,
        keys=tuple(dict.fromkeys(k for k in keys if k)),
        record_keys=_record_keys(fm),
        frontmatter=fm,
        sensitive=sensitive,
        salience=_salience(fm),
        links=tuple(_unique_links(parsed.links)),
    )
    return PreparedNote(
        note=note,
        pieces=pieces,
        texts=[search_text(title, p.heading, p.text, aliases) for p in pieces],
        warnings=warnings,
        mentions=[find_mentions(p.text) for p in pieces],
    )


def _unique_links(links: Sequence[Link]) -> list[Link]:
    return list(dict.fromkeys(links))


def with_vectors(prepared: PreparedNote, vectors: Sequence[Sequence[float]]) -> Note:
    """The note with its chunks and their vectors."""
    n = prepared.note
    chunks = tuple(
        Chunk(
            id=f"{n.id}-{i}",
            note_id=n.id,
            ordinal=i,
            text=p.text,
            heading=p.heading,
            start=p.start,
            end=p.end,
            search_text=prepared.texts[i],
            vector=vectors[i],
            mentions=prepared.mentions[i],
        )
        for i, p in enumerate(prepared.pieces)
    )
    return dataclasses.replace(n, chunks=chunks)

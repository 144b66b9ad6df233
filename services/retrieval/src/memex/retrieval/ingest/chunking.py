"""Heading-aware chunking: sections by heading, packed to at most ``max_chars``, never mid-word.

Every chunk keeps its heading path ("Plans > Q3") and its character offsets in the note body,
so ``body[start:end] == text``. A section that is only a heading joins the next section, and so
does a note's short opening (under ``LEAD_CHARS``: "What Graham and I agreed about the deposit.
Part of Moving Flat."): alone it carries no fact, yet it matches every question about the note
and takes a briefing's place; with the section after it, that section gains the note's
context. A section longer than the limit is split at paragraph breaks, then sentence ends, then
spaces; only a single "word" longer than the limit (a pasted blob) is ever cut, at the limit.
A fenced block that a plugin reads or draws (``MACHINE_FENCES``: a Dataview query, an
Excalidraw drawing's compressed JSON) is not text the person wrote: chunks leave it out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.retrieval.ingest.markdown import code_mask, fences, headings
from memex.shared.aliases import other_names

MAX_CHARS = 1600
LEAD_CHARS = 240
CHUNKER_VERSION = "4"  # 2: a short opening joins the section after it; 3: machine blocks out
# 4: a frontmatter with properties opens the first chunk
# Fenced blocks whose language names a plugin's input or output rather than the person's words:
# Dataview and Tasks queries, Obsidian's embedded searches, and the compressed drawing that every
# Excalidraw note carries (base64 that would otherwise be embedded as chunks).
MACHINE_FENCES = frozenset(
    {"dataview", "dataviewjs", "tasks", "query", "compressed-json", "excalidraw", "base"}
)
# A note with a long list of aliases must not push its title out of every chunk's opening.
_MAX_ALIASES = 8
_BREAKS = (re.compile(r"\n[ \t]*\n"), re.compile(r"(?<=[.!?])\s+"), re.compile(r"\s+"))


@dataclass(frozen=True)
class TextChunk:
    """A chunk before embedding."""

    text: str
    heading: str
    start: int
    end: int


def _sections(body: str) -> list[tuple[str, int, int]]:
    """(heading path, start, end) per section; headings inside code blocks do not count."""
    sections: list[tuple[str, int, int]] = []
    path: list[tuple[int, str]] = []
    start, offset, current = 0, 0, ""
    for line, in_code in zip(body.split("\n"), code_mask(body), strict=True):
        found = None if in_code else headings(line)
        if found is not None:
            if offset > start:
                sections.append((current, start, offset))
            level, title = found
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            current = " > ".join(t for _, t in path)
            start = offset
        offset += len(line) + 1
    sections.append((current, start, len(body)))
    return sections


def machine_blocks(body: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced block whose language is in ``MACHINE_FENCES``."""
    return [(f.start, f.end) for f in fences(body) if f.language in MACHINE_FENCES]


def _outside(
    sections: list[tuple[str, int, int]], blocks: list[tuple[int, int]]
) -> list[tuple[str, int, int]]:
    """The sections with the machine blocks cut out: a section a block splits becomes two
    spans under the same heading."""
    spans: list[tuple[str, int, int]] = []
    for heading, start, end in sections:
        for block_start, block_end in blocks:
            if block_end <= start or block_start >= end:
                continue
            if block_start > start:
                spans.append((heading, start, block_start))
            start = max(start, block_end)
        if start < end:
            spans.append((heading, start, end))
    return spans


def _only_headings(text: str) -> bool:
    return all(headings(line) is not None for line in text.splitlines() if line.strip())


def _split(body: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Spans covering body[start:end], each at most ``limit`` characters, cut at the coarsest
    break that fits. A loop, not recursion: a pasted transcript of a few megabytes is one
    section of thousands of spans."""
    spans: list[tuple[int, int]] = []
    while end - start > limit:
        window = body[start : start + limit + 1]
        for pattern in _BREAKS:
            cuts = [m for m in pattern.finditer(window) if 0 < m.start() <= limit]
            if cuts:
                spans.append((start, start + cuts[-1].start()))
                start += cuts[-1].end()
                break
        else:
            spans.append((start, start + limit))
            start += limit
    spans.append((start, end))
    return spans


def _trim(body: str, start: int, end: int) -> tuple[int, int]:
    while start < end and body[start].isspace():
        start += 1
    while end > start and body[end - 1].isspace():
        end -= 1
    return start, end


def chunk_body(
    body: str, max_chars: int = MAX_CHARS, *, join_opening: bool = True
) -> list[TextChunk]:
    """Splits a note body into chunks (see the module doc). ``join_opening`` False: a short
    opening stands alone, as a document's first page or message must (its citation names it)."""
    chunks: list[TextChunk] = []
    pending: tuple[str, int, int] | None = None  # a heading-only section waiting for content
    opening = True  # no section with content seen yet
    blocks = machine_blocks(body)
    for heading, start, end in _outside(_sections(body), blocks):
        s, e = _trim(body, start, end)
        if s == e:
            continue
        if pending is not None and any(pending[2] <= a and b <= s for a, b in blocks):
            # A machine block lies between: joining would put it in the chunk. A short opening
            # stands alone; headings alone are dropped (the next span keeps them in its path).
            held_heading, held_start, held_end = pending
            if not _only_headings(body[held_start:held_end]):
                chunks.append(
                    TextChunk(body[held_start:held_end], held_heading, held_start, held_end)
                )
            pending = None
        first_line_end = body.find("\n", s, e)
        only_heading = first_line_end == -1 and headings(body[s:e]) is not None
        opened = pending[1] if pending else s
        if only_heading or (join_opening and opening and e - s < LEAD_CHARS):
            pending = (heading, opened, e)
            opening = opening and only_heading  # only the first section with content joins on
            continue
        opening = False
        if pending is not None:
            s = pending[1]
            pending = None
        packed: list[tuple[int, int]] = []
        for a, b in _split(body, s, e, max_chars):
            a, b = _trim(body, a, b)
            if a < b:
                packed.append((a, b))
        # Merge neighbours that fit together (paragraph splitting can leave small pieces).
        merged: list[tuple[int, int]] = []
        for a, b in packed:
            if merged and b - merged[-1][0] <= max_chars:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        chunks += [TextChunk(body[a:b], heading, a, b) for a, b in merged]
    if pending is not None:
        heading, s, e = pending
        chunks.append(TextChunk(body[s:e], heading, s, e))
    return chunks


def with_frontmatter(
    chunks: list[TextChunk], text: str, body_offset: int, max_chars: int = MAX_CHARS
) -> list[TextChunk]:
    """The chunks of a note whose frontmatter holds properties ("phone: 0113 496 0000",
    "author: Susanna Clarke"), with that block in front: the first chunk starts at the top of
    the file when both fit in ``max_chars``, else the block is a chunk of its own. Otherwise
    the properties are in no chunk, so nothing finds or reads them, and a note of properties
    alone (a contact card) has no chunk at all. ``chunks`` carry offsets into ``text``, the
    whole file, and so does the result."""
    if chunks and chunks[0].end <= max_chars:
        first = chunks[0]
        return [TextChunk(text[: first.end], first.heading, 0, first.end), *chunks[1:]]
    head_end = len(text[:body_offset].rstrip())
    return [TextChunk(text[:head_end], "", 0, head_end), *chunks]


def search_text(title: str, heading: str, text: str, aliases: Sequence[str] = ()) -> str:
    """What gets embedded and keyword-indexed: the note title (with the other names it goes by,
    so "Who is Chi?" finds the note on Chioma) and heading path carry context."""
    extra = other_names(title, aliases)[:_MAX_ALIASES]
    name = f"{title} ({', '.join(extra)})" if extra else title
    head = f"{name} > {heading}" if heading else name
    return f"{head}\n\n{text}"

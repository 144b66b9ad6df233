"""The numbered briefing (SPEC B7, issue 10): retrieved items shown to the model as [1]..[n].

A small model on a CPU spends most of an answer reading its prompt, so the briefing is sized in
tokens, not chunks. Items are taken best first; each is tightened to a window of its sentences
around the one that best matches the question (in document order, at most ``excerpt_chars``),
until the token budget is spent. The model cites a source by its number, and every number maps
back to exactly one item, so a citation is checked against the chunk it names, never a sibling
chunk of the same note.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.items import ShownItem
from memex.orchestrator.lexical import Segment, overlap_score, segments, squash, terms

# The orchestrator has no tokenizer. Notes are Markdown with figures and dates, which tokenize
# densely: the demo vault is 3.2 characters a token for Qwen2.5 and 3.0 for SmolLM2 (measured).
CHARS_PER_TOKEN = 3.2
EMPTY_MEMORY_NOTE = "(The memory is empty: there are no notes or records to draw on yet.)"

_LABELS = {
    "chunk": "",
    "record": "Record: ",
    "belief": "Belief (a conclusion drawn from the notes, not the person's words): ",
    "observation": "Observation (from a connected service): ",
}


@dataclass(frozen=True, eq=False)  # one source is one object: compared and hashed by identity
class Source:
    """One numbered source: the item, and the excerpt of it that the model saw."""

    number: int
    item: ShownItem
    excerpt: str
    segments: tuple[Segment, ...]

    @property
    def ref(self) -> str:
        """How a citation of this source reads: ``[[Note Title]]`` or ``collection:id``."""
        return self.item.ref


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` is likely to take in the model's prompt."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap].rsplit(" ", 1)[0] + " …"


def tighten(text: str, query: Counter[str], cap: int) -> tuple[str, tuple[Segment, ...]]:
    """The part of ``text`` worth showing for ``query``: all of it when it fits in ``cap``
    characters, else the best-matching sentence widened by its neighbours while they fit."""
    text = text.strip()
    parts = segments(text)
    if len(text) <= cap or not parts:
        return _shorten(text, cap), tuple(parts)
    scores = [overlap_score(query, p.text) for p in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    first = last = best
    while True:
        grown = False
        for candidate in (last + 1, first - 1):
            if 0 <= candidate < len(parts):
                lo, hi = min(first, candidate), max(last, candidate)
                if parts[hi].end - parts[lo].start <= cap:
                    first, last, grown = lo, hi, True
        if not grown:
            break
    window = parts[first : last + 1]
    body = _shorten(text[window[0].start : window[-1].end], cap)
    lead = "… " if window[0].start > 0 else ""
    tail = " …" if window[-1].end < len(text) and not body.endswith("…") else ""
    return f"{lead}{body}{tail}", tuple(window)


def header(source: Source) -> str:
    """``[n] Title (date)``, with the kind of item when it is not a note."""
    item = source.item
    name = item.title or item.ref
    date = f" ({item.date})" if item.date else ""
    return f"[{source.number}] {_LABELS[item.kind]}{name}{date}"


def render(source: Source) -> str:
    """One source as the model reads it."""
    return f"{header(source)}\n{source.excerpt}"


def select(
    items: Sequence[ShownItem],
    question: str,
    *,
    token_budget: int,
    excerpt_chars: int,
    limit: int,
) -> list[Source]:
    """Numbered sources for ``question``, best first, within ``token_budget`` (always at least
    one source when there is any item) and at most ``limit`` of them. Items whose text repeats
    an earlier one are skipped."""
    query = Counter(terms(question))
    chosen: list[Source] = []
    seen: set[str] = set()
    used = 0
    for item in items:
        if len(chosen) >= limit:
            break
        key = squash(item.text)
        if not key or key in seen:
            continue
        excerpt, parts = tighten(item.text, query, excerpt_chars)
        source = Source(len(chosen) + 1, item, excerpt, parts)
        cost = estimate_tokens(render(source)) + 2
        if chosen and used + cost > token_budget:
            break
        seen.add(key)
        chosen.append(source)
        used += cost
    return chosen


def render_all(sources: Sequence[Source]) -> str:
    """The Sources block, or the empty-memory note when there is nothing to show."""
    if not sources:
        return EMPTY_MEMORY_NOTE
    return "Sources:\n\n" + "\n\n".join(render(s) for s in sources)

"""The numbered briefing (SPEC B7, issue 10): retrieved items shown to the model as [1]..[n].

A small model on a CPU spends most of an answer reading its prompt, so the briefing is sized in
tokens, not chunks. Items are taken best first; each is tightened to the sentences that best
match the question (every one that matches as well as the best, a table row with its header),
widened by their neighbours, in document order, at most ``excerpt_chars``, until the token
budget is spent. The model cites a source by its number, and every number maps
back to exactly one item, so a citation is checked against the chunk it names, never a sibling
chunk of the same note.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from memex.orchestrator.answer.claim_check import Shown
from memex.orchestrator.answer.lexical import Segment, overlap_score, segments, squash, terms
from memex.orchestrator.memory.items import ShownItem
from memex.shared.aliases import holds_words
from memex.shared.wikilinks import replace_wikilinks

# The orchestrator has no tokenizer. Notes are Markdown with figures and dates, which tokenize
# densely: the demo vault is 3.2 characters a token for Qwen2.5 and 3.0 for SmolLM2 (measured).
CHARS_PER_TOKEN = 3.2
EMPTY_MEMORY_NOTE = "(The memory is empty: there are no notes or records to draw on yet.)"

_MAX_ALIASES = 3
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
    # The note's other names that the question uses ("Who is Chi?": "Chi"), for its header.
    also_called: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        """How a citation of this source reads: ``[[Note Title]]`` or ``collection:id``."""
        return self.item.ref

    @cached_property
    def shown(self) -> str:
        """The excerpt as the model reads it (``plain``); computed once, graded many times."""
        return plain(self.excerpt, self.item.title)

    @cached_property
    def checkable(self) -> Shown:
        """All the model read of this source (header, date, excerpt), for the claim check."""
        heading = f"{self.item.title} {dateline(self.item)} {self.item.date}"
        return Shown.of(self.ref, self.excerpt, self.shown, header=heading)


_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_TABLE_RULE = re.compile(r"\s*\|?(?:\s*:?-{3,}:?\s*\|?)+\s*")
_HEADING = re.compile(r"\s*#{1,6}\s+(.*?)\s*#*\s*")
# Obsidian's marks that a reader never sees as written: a callout's type ("> [!note]- Rent"
# shows a box titled "Rent") and a block id at a line's end ("... by May. ^sails-q3"). A
# %%comment%% stays: hidden in reading view, but the person's own words.
_CALLOUT = re.compile(r"^(\s*(?:>\s*)+)\[![\w-]+\][+-]?[ \t]*")
_BLOCK_ID = re.compile(r"[ \t]+\^[A-Za-z0-9-]+[ \t]*$")
# A footnote's mark ("£48 a year[^1]") and the label its text starts with ("[^1]: Paid in
# March"): rendered as a small number, which a small model takes for a source number.
# A date as ISO writes it ("finished: 2026-02-03"), which a small model misreads (it answered
# "December 3"); shown as notes write dates ("3 February 2026", ``spoken_date``).
_ISO_DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
_FOOTNOTE = re.compile(r"\[\^[^\]\s]+\](?::[ \t]*)?")
# A task's box as Obsidian (and its Tasks plugin) shows it, in words a small model reads: "[ ]"
# and "[x]" look like the source numbers it is asked to write.
_TASK = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)\[([ xX/>-])\]\s+")
_TASK_STATES = {
    " ": "to do",
    "x": "done",
    "X": "done",
    "/": "in progress",
    "-": "cancelled",
    ">": "deferred",
}


def plain(text: str, title: str = "") -> str:
    """Markdown reduced to what a reader sees, for the model's prompt: links to notes as their
    words (the alias when there is one), no bold marks, no table rules, no heading that repeats
    the title the source's header already gives, no callout types, block ids or footnote marks,
    a task's box in words ("- (done) Council tax: Band B"), dates as notes write them ("3
    February 2026", not "2026-02-03"). It saves prompt tokens on a CPU, and keeps a small model
    from copying ``[[links]]`` into its answer as if they were citations. Quotes and grading
    still use the note's own text."""
    text = replace_wikilinks(text, lambda link: "" if link.embed else link.words)
    text = _EMPHASIS.sub(r"\2", text)
    kept: list[str] = []
    for line in text.splitlines():
        line = _FOOTNOTE.sub("", _BLOCK_ID.sub("", _CALLOUT.sub(r"\1", line)))
        line = _TASK.sub(lambda task: f"{task[1]}({_TASK_STATES[task[2]]}) ", line)
        heading = _HEADING.fullmatch(line)
        if _TABLE_RULE.fullmatch(line) or (
            heading and title and heading.group(1).casefold() == title.casefold()
        ):
            continue
        line = _ISO_DATE.sub(lambda date: spoken_date(date.group()), line)
        if line.strip() or (kept and kept[-1].strip()):
            kept.append(line.rstrip())
    return "\n".join(kept).strip()


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` is likely to take in the model's prompt."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap].rsplit(" ", 1)[0] + " …"


def tighten(
    text: str, query: Counter[str], cap: int, fallback: Counter[str] | None = None
) -> tuple[str, tuple[Segment, ...]]:
    """The part of ``text`` worth showing for ``query`` (``fallback`` when no sentence holds a
    word of ``query``): all of it when it fits in ``cap`` characters, else the sentences that
    match it best, each widened by its neighbours while they fit. Every sentence that matches
    as well as the best one is kept, not only the first: "Which novel did I read in November?"
    matches "Managed nine by November." and a table's "| Nov | Piranesi |" row alike, and a
    window around the first alone cut the row off. A table row brings its table's header row,
    which says what its cells are."""
    text = text.strip()
    parts = segments(text)
    if len(text) <= cap or not parts:
        return _shorten(text, cap), tuple(parts)
    scores = [overlap_score(query, p.text) for p in parts]
    if max(scores) == 0 and fallback:
        scores = [overlap_score(fallback, p.text) for p in parts]
    top = max(scores)
    chosen: set[int] = set()
    for anchor in [i for i, score in enumerate(scores) if score == top] if top > 0 else [0]:
        wanted = chosen | {anchor} | _table_head(text, parts, anchor)
        if not chosen or _length(parts, wanted) <= cap:
            chosen = wanted
    grown = True
    while grown:
        grown = False
        for lo, hi in _runs(chosen):
            for candidate in (hi + 1, lo - 1):
                if (
                    candidate not in chosen
                    and 0 <= candidate < len(parts)
                    and _length(parts, chosen | {candidate}) <= cap
                ):
                    chosen.add(candidate)
                    grown = True
    runs = _runs(chosen)
    body = text[parts[runs[0][0]].start : parts[runs[0][1]].end]
    for (_, before), (lo, hi) in itertools.pairwise(runs):
        gap = "\n…\n" if "\n" in text[parts[before].end : parts[lo].start] else " … "
        body += gap + text[parts[lo].start : parts[hi].end]
    body = _shorten(body, cap)
    lead = "… " if parts[runs[0][0]].start > 0 else ""
    tail = " …" if parts[runs[-1][1]].end < len(text) and not body.endswith("…") else ""
    return f"{lead}{body}{tail}", tuple(parts[i] for i in sorted(chosen))


def _runs(chosen: set[int]) -> list[tuple[int, int]]:
    """Consecutive segment numbers in ``chosen`` as (first, last) runs, in order."""
    runs: list[tuple[int, int]] = []
    for i in sorted(chosen):
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _length(parts: Sequence[Segment], chosen: set[int]) -> int:
    """Characters of the excerpt made of ``chosen``: each run verbatim, and " … " (or the same
    on lines of its own, between lines) between runs."""
    runs = _runs(chosen)
    return sum(parts[hi].end - parts[lo].start for lo, hi in runs) + 3 * (len(runs) - 1)


def _table_head(text: str, parts: Sequence[Segment], index: int) -> set[int]:
    """The segment that starts the header row of the table ``parts[index]`` is a row of (empty
    when it is not in a table, or is the header itself)."""
    line_start = text.rfind("\n", 0, parts[index].start) + 1
    if not text.startswith("|", line_start):
        return set()
    while line_start > 0:
        previous = text.rfind("\n", 0, line_start - 1) + 1
        if not text.startswith("|", previous):
            break
        line_start = previous
    head = next((i for i, p in enumerate(parts) if p.start >= line_start), index)
    return {head} if head != index else set()


_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# What a record's date is, by the field it came from (retrieval's order of date fields); a plain
# ``date`` needs no word. "Plan Christmas (due 10 December 2026)" answers "by when?"; a bare
# date in brackets reads to a small model as when the note was written.
_DATE_FIELDS = (
    ("date", ""),
    ("observed_at", "observed"),
    ("start", "starts"),
    ("due", "due"),
    ("created", "created"),
)


def spoken_date(iso: str) -> str:
    """``2026-12-10`` as ``10 December 2026`` (``2026-12`` as ``December 2026``): how notes write
    dates, so a model copies them that way, and fewer prompt tokens than ten digits and dashes.
    Anything that is not such a date is returned as it is."""
    match = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", iso.strip())
    if not match or not 1 <= int(match[2]) <= 12:
        return iso
    month = f"{_MONTH_NAMES[int(match[2]) - 1]} {match[1]}"
    return f"{int(match[3])} {month}" if match[3] else month


def dateline(item: ShownItem) -> str:
    """An item's date as its header shows it: ``10 December 2026``, with what the date is for a
    record whose date is not a plain ``date`` (``due 10 December 2026``), and a record's status
    (``pending``) when it has one; "" when undated and without a status."""
    parts = []
    if item.date:
        label = ""
        if item.kind != "chunk":
            label = next(
                (
                    word
                    for name, word in _DATE_FIELDS
                    if str(item.attributes.get(name) or "")[:10] == item.date
                ),
                "",
            )
        parts.append(f"{label} {spoken_date(item.date)}".strip())
    status = item.attributes.get("status") if item.kind != "chunk" else None
    if isinstance(status, str) and status.strip():
        parts.append(status.strip())
    return ", ".join(parts)


def header(source: Source) -> str:
    """``[n] Title (date)``, with the kind of item when it is not a note and the other names of
    the note that the question uses (``Chioma Okafor, also called Chi``)."""
    item = source.item
    name = item.title or item.ref
    if source.also_called:
        name += f", also called {' or '.join(source.also_called)}"
    when = dateline(item)
    return f"[{source.number}] {_LABELS[item.kind]}{name}{f' ({when})' if when else ''}"


def aliases_used(item: ShownItem, question: str) -> tuple[str, ...]:
    """The note's other names (retrieval's ``aliases``: those its title does not say) that
    ``question`` uses, at most three. "Who is Chi?" needs the model told that Chi is Chioma
    Okafor; aliases the question does not use would only cost prompt tokens (and, measured,
    moved other answers)."""
    aliases = item.attributes.get("aliases") if item.kind == "chunk" else None
    if not isinstance(aliases, list):
        return ()
    used = [a for a in aliases if isinstance(a, str) and a and holds_words(question, a)]
    return tuple(used[:_MAX_ALIASES])


def render(source: Source) -> str:
    """One source as the model reads it."""
    return f"{header(source)}\n{source.shown}"


def select(
    items: Sequence[ShownItem],
    question: str,
    *,
    token_budget: int,
    excerpt_chars: int,
    limit: int,
    lead_excerpt_chars: int | None = None,
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
        cap = excerpt_chars if chosen or lead_excerpt_chars is None else lead_excerpt_chars
        # The words of the question that name the note ("my 2025 return" of "Tax return
        # 2025") match its title heading, not the passage that answers: they place the window
        # only when nothing else does.
        named = set(terms(item.title))
        focus = Counter({term: n for term, n in query.items() if term not in named})
        excerpt, parts = tighten(item.text, focus, cap, query)
        source = Source(len(chosen) + 1, item, excerpt, parts, aliases_used(item, question))
        cost = _cost(source)
        if chosen and used + cost > token_budget:
            break
        seen.add(key)
        chosen.append(source)
        used += cost
    return chosen


def _cost(source: Source) -> int:
    return estimate_tokens(render(source)) + 2


def leading(sources: Sequence[Source], token_budget: int) -> list[Source]:
    """The first of ``sources`` that fit in ``token_budget`` (at least one): an ask's first pass,
    so that the whole briefing starts with exactly the prompt it read."""
    used, out = 0, list[Source]()
    for source in sources:
        used += _cost(source)
        if out and used > token_budget:
            break
        out.append(source)
    return out


def render_all(sources: Sequence[Source]) -> str:
    """The Sources block, or the empty-memory note when there is nothing to show."""
    if not sources:
        return EMPTY_MEMORY_NOTE
    return "Sources:\n\n" + "\n\n".join(render(s) for s in sources)

"""The model's source numbers (issue 10): the ``[n]`` markers a reply writes ("£48 a year [2]",
"[1, 3]", "[2-4]"; models that still write ``[[Note Title]]`` are understood too), which shown
sources they name, and the reply with them rewritten as the sources' refs.

Each number must name a source that was shown (SPEC B2): a marker naming nothing shown is
removed, so no fabricated citation reaches the reader. Also here, since they read the markers
too: a reply that lists the sources' headers after their numbers instead of answering
(``lists_sources``), and an answer with some sources' numbers taken out (``without``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memex.orchestrator.answer.lexical import squash
from memex.orchestrator.answer.sources import Source, dateline

_NUMBERS = r"\^?\d{1,2}(?:\s*(?:,|;|and|&|-|\u2013)\s*\^?\d{1,2})*"
MARKER = re.compile(
    rf"\[\s*(?:(?:sources?|refs?|excerpts?|notes?)\s*)?({_NUMBERS})\s*\]"
    rf"|\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]",
    re.IGNORECASE,
)
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")
# Markers one after another ("[1], [2]; [4]", "[[A]], [[B]]"), read as one run. Not "and": a
# wikilink may be a name in the sentence ("[[Graham]] and [1]").
_RUN = re.compile(rf"(?:{MARKER.pattern})(?:(?:\s*[,;])*\s*(?:{MARKER.pattern}))*", re.IGNORECASE)


def numbers(group: str) -> list[int]:
    """The source numbers in a marker's number list: "1, 3", "2-4", "^2"."""
    out: list[int] = []
    for part in re.split(r"\s*(?:,|;|and|&)\s*", group.replace("^", "")):
        if not part:
            continue
        bounds = re.split(r"\s*[-\u2013]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            out.extend(range(lo, hi + 1) if 0 < hi - lo < 10 else (lo, hi))
        elif part.isdigit():
            out.append(int(part))
    return out


def _by_title(sources: Sequence[Source]) -> dict[str, Source]:
    table: dict[str, Source] = {}
    for source in sources:
        for key in (source.item.title, source.ref.strip("[]")):
            if key:
                table.setdefault(key.strip().casefold(), source)
    return table


def named_by(match: re.Match[str], sources: Sequence[Source]) -> tuple[list[Source], list[str]]:
    """(sources a marker names, markers that named nothing shown)."""
    if match.group(1) is not None:
        found, missing = [], []
        for n in numbers(match.group(1)):
            if 1 <= n <= len(sources):
                found.append(sources[n - 1])
            else:
                missing.append(f"[{n}]")
        return found, missing
    source = _by_title(sources).get(match.group(2).strip().casefold())
    return ([source], []) if source else ([], [match.group(0)])


def marker_refs(match: re.Match[str], sources: Sequence[Source]) -> str:
    found, _ = named_by(match, sources)
    if found:
        return " ".join(dict.fromkeys(s.ref for s in found))
    return match.group(2) or ""


def sub_markers(text: str, replace: Callable[[re.Match[str]], str]) -> str:
    """``text`` with each marker replaced by ``replace``; in a run of markers ("[1], [2], [3]")
    what they become is joined by spaces, so one that becomes nothing leaves no
    separator behind ("[[A]],, [[C]]")."""

    def run(match: re.Match[str]) -> str:
        markers = list(MARKER.finditer(match.group(0)))
        if len(markers) == 1:
            return replace(markers[0])
        return " ".join(kept for marker in markers if (kept := replace(marker)))

    return _RUN.sub(run, text)


def rewrite(text: str, sources: Sequence[Source]) -> str:
    """``text`` with every marker replaced by the refs it names; markers naming nothing shown
    are removed (a wikilink keeps its words, not its brackets), so no fabricated citation
    reaches the reader."""

    text = _AFTER_SENTENCE.sub(lambda match: _unless_unshown(match, sources), text)
    return tidy(sub_markers(text, lambda match: marker_refs(match, sources))).strip()


# A wikilink after a sentence's end, past any markers there: where a citation stands, not a
# name in the prose.
_AFTER_SENTENCE = re.compile(
    rf"(?<=[.!?])((?:\s*(?:{MARKER.pattern}))*\s*)(?P<link>\[\[[^\[\]|]+(?:\|[^\[\]]*)?\]\])",
    re.IGNORECASE,
)


def _unless_unshown(match: re.Match[str], sources: Sequence[Source]) -> str:
    """The wikilink ``match`` ends with, gone when it names no shown source: in a citation's
    place, its words ("... in Ruby. performance-warnings") are not part of any sentence."""
    link = MARKER.fullmatch(match.group("link"))
    found = named_by(link, sources)[0] if link else []
    return match.group(0) if found else match.group(0)[: match.start("link") - match.start()]


def tidy(text: str) -> str:
    """The spacing a removed marker leaves ("is [7]." → "is ."), closed up; a ref repeated
    right after itself kept once. Used on whole answers and on streamed pieces alike, so the
    reader sees what is stored."""
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", re.sub(r"[ \t]{2,}", " ", text))
    return re.sub(r"(\[\[[^\]]+\]\])(?:\s+\1)+", r"\1", text)


def lists_sources(text: str, sources: Sequence[Source]) -> bool:
    """Whether two or more source numbers in ``text`` are each followed by a shown source's
    header, its title, a part of the title, or its date ("[1] 2026-11-22, [2] Warden GA"): the
    model copying the list of sources. One is an answer ("I moved on [6] 16 May 2026")."""
    headers: set[str] = set()
    for source in sources:
        title = source.item.title
        headers.update(squash(part) for part in (title, dateline(source.item)))
        headers.update(squash(part) for part in re.split(r"\s+[\u2014\u2013-]\s+", title))
    known = sorted((h for h in headers if len(h) > 3), key=len, reverse=True)
    listed = set()
    for match in MARKER.finditer(text):
        if match.group(1) is None:
            continue  # a [[wikilink]] names a note in the prose; it lists nothing
        after = squash(text[match.end() : match.end() + 120]).lstrip(" ,:;-")
        first = next((h for h in known if after.startswith(h)), None)
        if first:
            listed.add(first)
    return len(listed) >= 2


LEADING_MARKERS = re.compile(rf"(?:\s*(?:{MARKER.pattern}))+", re.IGNORECASE)


def without(text: str, sources: Sequence[Source], idle: set[int]) -> str:
    """``text`` with the numbers of the ``idle`` sources taken out of its markers (a marker
    left naming nothing goes)."""

    def keep(match: re.Match[str]) -> str:
        found, _ = named_by(match, sources)
        if not any(s.number in idle for s in found):
            return match.group(0)
        left = [s.number for s in found if s.number not in idle]
        return f"[{', '.join(str(n) for n in dict.fromkeys(left))}]" if left else ""

    return sub_markers(text, keep)

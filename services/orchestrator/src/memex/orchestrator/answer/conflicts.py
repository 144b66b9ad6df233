"""Contradictions (issue 37): when the answer states a value that one note gives and another
note in the briefing gives a different value for the same thing, the answer says so and cites
both, newest first.

Mechanical, like the claim check it reads (``Reading.specifics``): each figure the answer states
that a cited source holds is read with its kind (money in one currency, a measure in one unit, a
percentage, a time of day, a calendar date) in the sentence of that source that holds it. Another
note's sentence disagrees when it gives a figure of the same kind with another value, the first
source writes that value nowhere (a note that knows both values is not contradicted by either),
and it is about the same thing: it holds most of the words the answer's claim shares with the
first source's sentence (at least two, and two in the clause that writes the value), and every
name the claim and the question use and bare number the question gives that the first note
holds. Bare numbers and names are left alone: without a unit,
"3" in two notes is rarely the same quantity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.answer.claim_check import specifics
from memex.orchestrator.answer.lexical import figure_form, is_number, names, segments, terms
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.answer.sources import Source, spoken_date
from memex.orchestrator.memory.items import Citation, note_path
from memex.shared.dates import MONTHS, WEEKDAYS

# A share of the anchor a sentence must hold to be about the same thing as the claim.
SAME_THING = 2 / 3
MIN_ANCHOR = 2

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\b(?:,?\s+(\d{{4}}))?", re.I)),
    ("date", re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.I)),
    ("time", re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap]\.?m\.?)?(?![\d:])", re.I)),
    # "2 minutes 40" and "1 hour 5": the second number in the smaller unit, as people write it.
    (
        "duration",
        re.compile(
            r"(?<![\d.,])(\d+)\s?(hours?|hrs?|minutes?|mins?)\s+(\d{1,2})(?!\d|[.,:]\d|\s?[%A-Za-z])",
            re.I,
        ),
    ),
    ("money", re.compile(rf"([$£€¥])\s?({_NUMBER})(\s?[kK]\b)?")),
    ("percent", re.compile(rf"(?<![\d.,])({_NUMBER})\s?%")),
    (
        "measure",
        re.compile(
            rf"(?<![\d.,$£€¥])({_NUMBER})\s?(mm|cm|km|kg|g|lbs?|oz|miles?|mi|ml|litres?|liters?"
            r"|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|kwh|mph"
            r"|kph|degrees?|°)(?![A-Za-z])",
            re.I,
        ),
    ),
)
_UNIT_NAMES = {"hr": "hour", "min": "minute", "sec": "second", "mi": "mile", "lb": "lb"}
# Durations in one unit, so "2 minutes 40 seconds", "160 seconds" and "2:40 minutes" compare.
_SCALES = {"second": 1, "minute": 60, "hour": 3600, "day": 1, "week": 7}
_BASE_UNIT = {"second": "second", "minute": "second", "hour": "second", "day": "day", "week": "day"}
_JOINED = re.compile(r"\s*(?:,|and)?\s*")  # between the parts of "1 hour, 20 minutes and 5 s"


@dataclass(frozen=True)
class Value:
    """A figure read with its kind: ``("money", "£", "1030")``, ``("date", "", "3 june")``."""

    kind: str
    unit: str
    amount: str
    written: str  # as the text writes it


def values(text: str) -> list[Value]:
    """The figures of ``text`` that carry a kind, in order, none overlapping another; a duration
    written in parts ("2 minutes 40 seconds") is one value."""
    found: list[tuple[int, int, Value]] = []
    for kind, pattern in _KINDS:
        for match in pattern.finditer(text):
            lo, hi = match.span()
            if any(lo < end and start < hi for start, end, _ in found):
                continue
            found.append((lo, hi, _value(kind, match)))
    found.sort(key=lambda one: one[0])
    out: list[tuple[int, int, Value]] = []
    for lo, hi, value in found:
        if out and _adds_to(out[-1][2], value) and _JOINED.fullmatch(text[out[-1][1] : lo]):
            start, _, before = out.pop()
            total = float(before.amount) + float(value.amount)
            value = Value(value.kind, value.unit, figure_form(f"{total:.2f}"), text[start:hi])
            lo = start
        out.append((lo, hi, value))
    return [value for _, _, value in out]


def _adds_to(before: Value, after: Value) -> bool:
    """Whether ``after`` continues the duration ``before`` ("2 minutes" then "40 seconds")."""
    return before.kind == after.kind == "measure" and before.unit == after.unit in ("second", "day")


def _value(kind: str, match: re.Match[str]) -> Value:
    written = match.group().strip()
    if kind == "date":
        day, month = (match[1], match[2]) if match[1].isdigit() else (match[2], match[1])
        year = f" {match[3]}" if match[3] else ""
        return Value(kind, "", f"{int(day)} {month.casefold()[:3]}{year}", written)
    if kind == "time":
        hour, minute, half = int(match[1]), match[2], (match[3] or "").replace(".", "").casefold()
        hour = hour % 12 + (12 if half == "pm" else 0) if half else hour
        return Value(kind, "", f"{hour}:{minute}", written)
    if kind == "duration":
        larger = 3600 if match[2].casefold().startswith("h") else 60
        total = int(match[1]) * larger + int(match[3]) * larger // 60
        return Value("measure", "second", str(total), written)
    if kind == "money":
        thousands = 1000 if match[3] else 1
        amount = figure_form(match[2])
        if thousands > 1:
            amount = figure_form(f"{float(amount) * thousands:.2f}")
        return Value(kind, match[1], amount, written)
    if kind == "percent":
        return Value(kind, "%", figure_form(match[1]), written)
    unit = match[2].casefold().rstrip("s") or match[2]
    unit = _UNIT_NAMES.get(unit, unit)
    if unit in _SCALES:
        scaled = float(figure_form(match[1])) * _SCALES[unit]
        return Value(kind, _BASE_UNIT[unit], figure_form(f"{scaled:.2f}"), written)
    return Value(kind, unit, figure_form(match[1]), written)


def _same(a: Value, b: Value) -> bool:
    """Whether two values are of one kind, so they may disagree; a date with a year and one
    without are compared by day and month."""
    return a.kind == b.kind and a.unit == b.unit


def _equal(a: Value, b: Value) -> bool:
    if a.kind == "date":
        return a.amount.split(" ")[:2] == b.amount.split(" ")[:2]
    return a.amount == b.amount


@dataclass(frozen=True)
class Disagreement:
    """Two notes giving different values for one thing: the one the answer used, and another."""

    used: Source
    used_sentence: str
    used_value: Value
    other: Source
    other_sentence: str
    other_value: Value


def _note(source: Source) -> str:
    return note_path(source.item) or source.item.episode_id or source.ref


_CALENDAR = frozenset(t for word in (*MONTHS, *WEEKDAYS) for t in terms(word))


def _words(text: str) -> set[str]:
    """The words of ``text`` that say what a figure is of: no figures, and no month or weekday
    (they belong to a date, which is itself the value)."""
    return {t for t in terms(text) if not is_number(t) and t not in _CALENDAR}


def _whole(source: Source) -> set[str]:
    return set(terms(f"{source.item.title}\n{source.shown}"))


def _key_terms(claim: str, question: str, used: Source) -> set[str]:
    """What singles out the thing the claim is about: the names it and the question use and the
    bare numbers the question gives (a year, a plot number), as far as the used note holds them.
    Another note must hold them all to speak of the same thing: "Gord quoted $8,750" is not
    contradicted by another firm's quote, nor 2026's tyre swap by 2025's."""
    named = names(question) | {
        t for kind, text in specifics(claim) if kind == "name" for t in terms(text)
    }
    numbers = {t for t in terms(question) if is_number(t)}
    return (named | numbers) & _whole(used)


def find(reading: Reading, sources: Sequence[Source], question: str = "") -> list[Disagreement]:
    """Each figure of the answer that a note gives and another shown note contradicts; one
    disagreement per pair of notes, in the answer's order."""
    by_ref: dict[str, list[Source]] = {}
    for source in sources:
        by_ref.setdefault(source.ref, []).append(source)
    out: list[Disagreement] = []
    seen: set[tuple[str, str]] = set()
    for specific in reading.specifics:
        if specific.kind != "figure" or specific.verdict != "supported":
            continue
        figure = [t for t in terms(specific.text) if is_number(t)]
        claim = next((c for c in reading.claims if specific.text in c), "")
        for used in by_ref.get(specific.ref, []):
            for sentence in _prose(used):
                if not figure or not set(figure) <= set(terms(sentence)):
                    continue
                for found in against(sentence, claim, question, used, sources):
                    pair = (_note(found.used), _note(found.other))
                    if pair not in seen:
                        seen.add(pair)
                        out.append(found)
    return out


def against(
    sentence: str, claim: str, question: str, used: Source, sources: Sequence[Source]
) -> list[Disagreement]:
    """The first sentence of each other shown note that gives another value for what
    ``sentence`` says (and the answer's ``claim`` states)."""
    anchor = _words(sentence) & (_words(claim) | _words(question))
    stated = values(claim)
    mine = [v for v in values(sentence) if any(_same(v, c) and _equal(v, c) for c in stated)]
    if len(anchor) < MIN_ANCHOR or not mine:
        return []
    known = values(used.shown) + stated  # a value the answer itself also gives is no news
    key = _key_terms(claim, question, used)
    out: list[Disagreement] = []
    for other in sources:
        if _note(other) == _note(used) or not key <= _whole(other):
            continue
        for candidate in _prose(other):
            held = _words(candidate) & anchor
            if len(held) < max(MIN_ANCHOR, SAME_THING * len(anchor)):
                continue
            found = _differing(mine, values(candidate), known)
            if found is not None and len(_words(_clause(candidate, found[1])) & anchor) >= (
                MIN_ANCHOR
            ):
                out.append(Disagreement(used, sentence, found[0], other, candidate, found[1]))
                break
    return out


_CLAUSE_END = re.compile(r"[,;:()\u2013\u2014]|\s-\s")


def _clause(sentence: str, value: Value) -> str:
    """The clause of ``sentence`` that writes ``value``: what the figure is said of there ("see
    the 1-1 of 18 November" in a sentence about a promotion dates the 1-1, not the promotion)."""
    at = sentence.find(value.written)
    if at < 0:
        return sentence
    starts = [m.end() for m in _CLAUSE_END.finditer(sentence, 0, at)]
    end = _CLAUSE_END.search(sentence, at + len(value.written))
    return sentence[starts[-1] if starts else 0 : end.start() if end else len(sentence)]


def _differing(
    mine: Sequence[Value], theirs: Sequence[Value], known: Sequence[Value]
) -> tuple[Value, Value] | None:
    """A value of ``mine`` and another of its kind in ``theirs`` that the first note nowhere
    writes (``known``); None when ``theirs`` gives the same value, or none of the kind."""
    for value in mine:
        alike = [v for v in theirs if _same(v, value)]
        if any(_equal(v, value) for v in alike):
            continue
        new = [v for v in alike if not any(_same(k, v) and _equal(k, v) for k in known)]
        if new:
            return value, new[0]
    return None


_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.M | re.S)
# A line of code or its output, or a table row: a figure there is an example, not a fact.
_NOT_PROSE = re.compile(r"^\s*(?:[$%>|#\u276f]|>>>|\w+>)|`[^`]*\d[^`]*`")


def _prose(source: Source) -> list[str]:
    """The sentences of a source's shown text that state things: code blocks, prompts, quoted
    output and table rows aside."""
    return [s.text for s in segments(_FENCE.sub("", source.shown)) if not _NOT_PROSE.search(s.text)]


def _when(source: Source) -> str:
    return spoken_date(source.item.date) if source.item.date else "undated"


def _newest_first(found: Disagreement) -> list[tuple[Source, str, Value]]:
    sides = [
        (found.used, found.used_sentence, found.used_value),
        (found.other, found.other_sentence, found.other_value),
    ]
    return sorted(sides, key=lambda side: side[0].item.date or "", reverse=True)


def said(found: Sequence[Disagreement]) -> str:
    """The paragraph the answer ends with: each disagreement, the newest note first."""
    lines = []
    for one in found:
        newest, oldest = _newest_first(one)
        lines.append(
            f"Your notes differ on this: {newest[0].ref} ({_when(newest[0])}) gives "
            f"{newest[2].written}, {oldest[0].ref} ({_when(oldest[0])}) gives {oldest[2].written}."
        )
    return "".join(f"\n\n{line}" for line in lines)


def citations(found: Sequence[Disagreement], cited: Sequence[Citation]) -> list[Citation]:
    """``cited`` with both sides of each disagreement cited, newest first where they are new."""
    out = list(cited)
    refs = {c.ref for c in cited}
    for one in found:
        for source, sentence, _ in _newest_first(one):
            if source.ref in refs:
                continue
            refs.add(source.ref)
            out.append(
                Citation(
                    ref=source.ref,
                    item_id=source.item.item_id,
                    episode_id=source.item.episode_id,
                    quote=sentence,
                    support="verbatim",
                    path=note_path(source.item),
                )
            )
    return out

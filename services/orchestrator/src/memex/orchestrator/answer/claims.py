"""An answer's claims (issue 10): its sentences, each with the shown sources its numbers name,
and the fixes to where those numbers point.

A number vouches for its sentence and the uncited sentences just before it; an answer that opens
with numbers writes them before what they vouch for. Small models often copy a fact right and
then write the number of a neighbouring source ("2:04:37 [4]" when [1] holds it): a claim that
its named sources support only by inference, but another shown source supports, is re-anchored
to that source (``reanchor``), in the answer's text too (``renumbered``). A source named only
because it stood beside the right one backs nothing, and its number goes (``idle_sources``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memex.orchestrator.answer.claim_check import (
    SpecificKind,
    holds,
    specifics,
)
from memex.orchestrator.answer.claim_check import (
    occurs_in as _occurs_in,
)
from memex.orchestrator.answer.grading import (
    PARAPHRASE_AT,
    RANK,
    SUPPORTED_AT,
    grade,
    shown_terms,
)
from memex.orchestrator.answer.lexical import Segment, coverage, is_number, segments, terms
from memex.orchestrator.answer.numbers import LEADING_MARKERS, MARKER, named_by
from memex.orchestrator.answer.sources import Source

# Words that point at the sources instead of saying what they hold: "I am in the office on the
# following days: [1], [2], [3]" lists source numbers as its answer and says nothing.
_POINTING = frozenset(
    terms("following follows listed mentioned below above sources notes excerpts")
)
YES_NO = frozenset(terms("yes no"))


def says_more(claim: str, question: str) -> bool:
    """Whether ``claim`` has a word that neither ``question`` nor pointing at sources has
    ("yes" and "no" aside: on their own they hold no fact a source could)."""
    said = set(terms(question)) | _POINTING | YES_NO
    return any(term not in said for term in terms(claim))


def _pieces(text: str) -> list[Segment]:
    """The answer's sentences, with numbers that open a sentence ("... January. [1] Ron")
    split off into a piece of their own: they close the sentence before."""
    out: list[Segment] = []
    for part in segments(text):
        leading = LEADING_MARKERS.match(part.text)
        if leading and 0 < leading.end() < len(part.text):
            cut = part.start + leading.end()
            out += [
                Segment(part.start, cut, part.text[: leading.end()]),
                Segment(cut, part.end, part.text[leading.end() :]),
            ]
        else:
            out.append(part)
    return out


@dataclass
class Claim:
    """One sentence of an answer, the sources its numbers name, and where those numbers are."""

    text: str
    named: list[Source] = field(default_factory=list)
    markers: list[tuple[int, int]] = field(default_factory=list)  # spans in the answer
    moved: bool = False
    span: tuple[int, int] = (0, 0)  # the sentence in the answer, its own markers included


def _markers(
    piece: Segment, sources: Sequence[Source], dropped: list[str]
) -> tuple[list[Source], list[tuple[int, int]]]:
    """The sources ``piece``'s markers name and those markers' spans in the answer; markers
    that name nothing shown are added to ``dropped``."""
    named: list[Source] = []
    spans: list[tuple[int, int]] = []
    for match in MARKER.finditer(piece.text):
        found, missing = named_by(match, sources)
        named.extend(found)
        dropped.extend(missing)
        if found:
            spans.append((piece.start + match.start(), piece.start + match.end()))
    return named, spans


def claims_of(text: str, sources: Sequence[Source]) -> tuple[list[Claim], list[str]]:
    """Each sentence of the answer with the sources its markers name; a sentence that is only
    markers ("[1][2]") belongs to the sentence before it. An answer that opens with a marker
    writes its numbers before what they vouch for ("[1] Ada was born on 14 August 2025."):
    then a number belongs to the sentences after it, up to the next number."""
    if LEADING_MARKERS.match(text):
        return _prefixed_claims(text, sources)
    claims: list[Claim] = []
    dropped: list[str] = []
    uncited = 0  # sentences just before this one that named no source
    for piece in _pieces(text):
        named, spans = _markers(piece, sources, dropped)
        claim = MARKER.sub(" ", piece.text).strip()
        # A number vouches for its sentence and for the uncited sentences right before it
        # ("... due in January. Paid in cash. [2]"); numbers alone ("[1][2]") belong to the
        # sentences before them.
        if not terms(claim) and claims:
            targets = claims[len(claims) - max(uncited, 1) :]
            claims[-1].span = (claims[-1].span[0], piece.end)
        else:
            claims.append(Claim(claim, span=(piece.start, piece.end)))
            targets = claims[len(claims) - 1 - uncited :]
        if named:
            for target in targets:
                target.named.extend(named)
                target.markers.extend(spans)
            uncited = 0
        elif terms(claim):
            uncited += 1
    return claims, dropped


def _prefixed_claims(text: str, sources: Sequence[Source]) -> tuple[list[Claim], list[str]]:
    """``claims_of`` for an answer whose numbers come before the sentences they vouch for."""
    claims: list[Claim] = []
    dropped: list[str] = []
    vouching: list[Source] = []  # the last numbers written, until new ones come
    pending: list[tuple[int, int]] = []  # their spans, not yet given to a sentence
    start: int | None = None
    for piece in _pieces(text):
        named, spans = _markers(piece, sources, dropped)
        claim = MARKER.sub(" ", piece.text).strip()
        if not terms(claim):
            vouching, pending = named or vouching, pending + spans
            start = piece.start if start is None else start
            continue
        claims.append(
            Claim(
                claim,
                named=[*vouching, *named],
                markers=[*pending, *spans],
                span=(piece.start if start is None else start, piece.end),
            )
        )
        pending, start = [], None
    if claims and pending:  # numbers after the last sentence close it
        claims[-1].markers.extend(pending)
        claims[-1].span = (claims[-1].span[0], len(text))
    return claims, dropped


def reanchor(claim: Claim, sources: Sequence[Source], question: str) -> None:
    """Moves ``claim`` to the shown source that supports it (paraphrase or better) when the
    sources it names support it only by inference. That source must hold most of the claim's
    words, not only its figure: "$4 mm." is not moved to "threw 4 mugs". A claim that only
    restates the question ("Yes, there is something I still need to do about voting.") holds no
    fact to move: its number, closing the sentence after it too, was meant for that one.
    A claim whose named sources lack something it gives to type or names exactly (a command, a
    flag, a name: ``claim_check.specifics``) moves too, to a source that holds all of those:
    "You can check it by running `df -i`. [2]" where [2] shows only `df -h` and [1] shows
    `df -i` is [1]'s claim, however many of its plain words [2] also has."""
    named = list(dict.fromkeys(claim.named))
    if not named or not says_more(claim.text, question):
        return
    exact = [
        (kind, text)
        for kind, text in specifics(claim.text)
        if kind != "figure" and not _occurs_in(text, question)
    ]

    def holds_all(source: Source) -> bool:
        return len(_specifics_held(exact, source)) == len(exact)

    lacking = bool(exact) and not any(holds_all(s) for s in named)
    if not lacking and any(grade(claim.text, s, question).support != "inference" for s in named):
        return
    words = [term for term in terms(claim.text) if not is_number(term)]
    graded = [
        (grade(claim.text, s, question), s)
        for s in sources
        if s not in named
        and (not words or coverage(words, shown_terms(s)) >= PARAPHRASE_AT)
        and (not lacking or holds_all(s))
    ]
    best = max(graded, key=lambda pair: (RANK[pair[0].support], pair[0].cover), default=None)
    if best is not None and best[0].support != "inference":
        claim.named, claim.moved = [best[1]], True


def _score(claim: str, source: Source, question: str) -> tuple[int, int, float]:
    """How well ``source`` holds ``claim``: how many of its specifics, then its grade."""
    graded = grade(claim, source, question)
    return len(_specifics_held(specifics(claim), source)), RANK[graded.support], graded.cover


def _specifics_held(
    found: Sequence[tuple[SpecificKind, str]], source: Source
) -> list[tuple[SpecificKind, str]]:
    """Those of the specifics ``found`` that ``source`` holds, as the claim check reads it."""
    return [(kind, text) for kind, text in found if holds(kind, text, source.checkable)]


def idle_sources(claims: Sequence[Claim], question: str, text: str) -> set[int]:
    """The numbers of the sources that back no sentence of the answer themselves: each time
    they are named, in one run of numbers beside other sources ("... run `df -i`. [1][2]", a
    run after several sentences naming every source used anywhere), another source of the run
    holds the sentence better, and they hold nothing of it (no specific, no half of its other
    words) that the better one lacks; or they are named only by sentences that restate the
    question (a number closing those and a sentence moved to another source, ``reanchor``). A
    citation says where a claim comes from; a note named only because it stood beside the right
    one in the briefing is not one. Numbers written at different places in a sentence ("£800
    [1], and the boiler got fixed [2]") each vouch for their own part: those all stand."""
    earned: set[int] = set()
    named_anywhere: set[int] = set()
    for claim in claims:
        named = list(dict.fromkeys(claim.named))
        named_anywhere |= {s.number for s in named}
        if not says_more(claim.text, question) or _about_sources(claim.text):
            continue  # it restates the question, or speaks of the sources: it rests on none
        if len(named) < 2 or not _one_run(claim.markers, text):
            earned |= {s.number for s in named}
            continue
        scores = {s.number: _score(claim.text, s, question) for s in named}
        top = max(scores.values())
        if top[:2] == (0, RANK["inference"]) and top[2] < SUPPORTED_AT:
            continue  # none of them holds it ("The source for this is [1][2]."): no one earns
        leaders = [s for s in named if scores[s.number] == top]
        earned |= {s.number for s in leaders}
        others = [s for s in named if s not in leaders]
        earned |= {s.number for s in others if _adds_to(claim.text, s, leaders, question)}
    if not earned:
        return set()
    return named_anywhere - earned


# The words of a sentence about where an answer comes from ("The source for this information
# is [1][2].", "This is found in the notes."), as ``terms`` reads them.
_SOURCE_TALK = frozenset(
    terms("source sources note notes excerpt excerpts information found given provided according")
)


def _about_sources(claim: str) -> bool:
    """Whether ``claim`` says only where the answer comes from, nothing of its own."""
    said = set(terms(claim))
    return bool(said) and said <= _SOURCE_TALK


def _one_run(markers: Sequence[tuple[int, int]], text: str) -> bool:
    """Whether ``markers`` (spans in ``text``) stand together, nothing but spaces and
    punctuation between them."""
    spans = sorted(set(markers))
    return all(
        not re.search(r"\w", text[end:start]) for (_, end), (start, _) in itertools.pairwise(spans)
    )


def _adds_to(claim: str, source: Source, leaders: Sequence[Source], question: str) -> bool:
    """Whether ``source`` holds part of ``claim`` that none of ``leaders`` holds: one of its
    specifics, or at least half of its other words (two or more) that are not the question's."""
    theirs = {found for s in leaders for found in _specifics_held(specifics(claim), s)}
    if any(found not in theirs for found in _specifics_held(specifics(claim), source)):
        return True
    held = set().union(*(shown_terms(s) for s in leaders))
    asked = set(terms(question))
    rest = [t for t in terms(claim) if t not in held and t not in asked]
    return len(rest) >= 2 and coverage(rest, shown_terms(source)) >= PARAPHRASE_AT


def renumbered(text: str, claims: Sequence[Claim]) -> str:
    """``text`` with the markers of moved claims naming the sources they were moved to."""
    numbers_at: dict[tuple[int, int], list[int]] = {}
    for claim in claims:
        for span in claim.markers:
            numbers_at.setdefault(span, []).extend(s.number for s in claim.named)
    moved = {span for claim in claims if claim.moved for span in claim.markers}
    out, at = [], 0
    for start, end in sorted(moved):
        wanted = ", ".join(str(n) for n in dict.fromkeys(numbers_at[(start, end)]))
        out += [text[at:start], f"[{wanted}]"]
        at = end
    return "".join(out) + text[at:]

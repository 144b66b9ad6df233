"""Reading a numbered answer (issue 10): source numbers → checked citations, mechanically.

The model writes prose and cites sources by number in line ("£48 a year [2]"); that is all a
0.5B model has to get right. memex does the rest: each number is grounded (it must name a
source that was shown, SPEC B2, ``numbers.py``), the quote is the sentence of the cited excerpt
that best supports the claim, and the support label is graded from how much of the claim that
sentence holds (``grading.py``). Models that still write ``[[Note Title]]`` are understood too.

Before that, the claim check cuts every sentence that states a specific no cited source holds
(``check.py``), and claims that name a neighbouring source are re-anchored to the one that holds
them (``claims.py``); the reading counts how many were moved. This module puts those together:
``read`` (a numbered answer), ``read_reply`` (a reply, with a ``@@CITATIONS@@`` tail as the
fallback), and what they make of it, a ``Reading``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.answer.check import check_claims
from memex.orchestrator.answer.citations import parse_citations, police
from memex.orchestrator.answer.claims import Claim, idle_sources, renumbered
from memex.orchestrator.answer.grading import (
    ATTRIBUTE_AT,
    RANK,
    Grade,
    borrows_figure,
    grade,
    types_exactly,
)
from memex.orchestrator.answer.lexical import money, only_measured, segments, squash, terms
from memex.orchestrator.answer.numbers import lists_sources, rewrite, without
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.answer.to_type import lines_to_type
from memex.orchestrator.memory.items import CheckedSpecific, Citation, GroundingReport, note_path

_DECLINED = re.compile(
    r"\b(?:i|we)\s+(?:do\s+not|don't|cannot|can't|could\s+not|couldn't)\s+"
    r"(?:know|find|tell|say|answer|determine|see)\b"
    r"|\b(?:no|not\s+enough|insufficient)\s+(?:information|mention|record|details?|data)\b"
    r"|\b(?:not|never|isn't|aren't|wasn't|doesn't|don't|do\s+not|does\s+not|did\s+not)\b"
    r"[^.]{0,40}\b(?:mention(?:ed)?|stated?|specif(?:y|ied)|provided?|included?|given|found|"
    r"recorded|covered|says?|contain(?:ed)?)\b[^.]{0,40}\b(?:notes?|sources?|excerpts?|records?|"
    r"memory|context|text|information)\b"
    r"|\b(?:notes?|sources?|excerpts?|records?)\b[^.]{0,30}\b(?:do\s+not|don't|does\s+not|"
    r"doesn't|did\s+not|didn't)\s+(?:say|mention|contain|include|specify|state|cover|answer)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reading:
    """What memex makes of a numbered answer."""

    answer: str  # the prose, its numbers rewritten as the sources' refs
    citations: list[Citation]
    report: GroundingReport
    declined: bool  # the model said the sources do not answer the question
    support: float  # how well the best-supported claim is covered by its cited sentence
    attributed: bool  # citations found for an answer that cited nothing itself
    reanchored: int = 0  # claims whose number named the wrong source, moved to the right one
    claims: tuple[str, ...] = ()  # the answer's sentences, without their numbers
    # An amount of money the answer gives that no source shown writes as money: made up, or
    # read from a measure ("$4" from "brake pads at 4 mm").
    unfounded_money: bool = False
    # A claim put in one note's words with a figure that only other notes hold ("The refund for
    # the cancelled whale-watching trip was $1,000", the trip note saying only that a refund
    # came, the $1,000 being the tax refund's): the figure answers another question.
    borrowed_figure: bool = False
    # Source numbers followed by the sources' own headers ("on [1] 2026-11-22, [2] 2026-06-02"):
    # the model listed what it was shown instead of answering.
    lists_sources: bool = False
    # The claim check (``answer/claim_check.py``): every specific the answer stated, with its
    # verdict, and the sentences dropped because a specific of theirs is in no cited source.
    specifics: tuple[CheckedSpecific, ...] = ()
    dropped_claims: tuple[str, ...] = ()
    # The answer's main claim (its first sentence that says more than the question) was dropped:
    # what is left does not answer, so the ask abstains.
    main_unsupported: bool = False
    # Parts of a compound question whose only answer the claim check cut.
    unanswered_parts: tuple[str, ...] = ()
    # The reply as the model wrote it, source numbers and all, before anything was cut: what a
    # later call's answer to one part of the question is read together with (``merged``).
    raw: str = ""
    # The note's own line for a command the answer names in part, with the source's ref
    # (``answer/to_type.py``): what the person types, verbatim.
    to_type: tuple[tuple[str, str], ...] = ()


def declines(text: str) -> bool:
    """Whether the answer opens by saying the sources do not answer the question."""
    parts = segments(text.strip())
    return not parts or bool(_DECLINED.search(parts[0].text))


def read(text: str, sources: Sequence[Source], question: str = "", said: str = "") -> Reading:
    """Grounds and grades a numbered answer to ``question`` against the sources it was
    written from, after the claim check has cut every sentence that states a specific no
    cited source holds."""
    raw = text
    checked = check_claims(text, sources, question, said)
    text, claims, dropped = checked.text, checked.claims, checked.missing
    reanchored = sum(claim.moved for claim in claims)
    idle = idle_sources(claims, question, text)
    if reanchored:
        text = renumbered(text, claims)
    if idle:
        text = without(text, sources, idle)
        for claim in claims:
            claim.named = [s for s in claim.named if s.number not in idle]
    best: dict[int, tuple[Grade, Source]] = {}
    order: list[int] = []
    cited = len(dropped)
    for claim in claims:
        for source in dict.fromkeys(claim.named):
            cited += 1
            graded = grade(claim.text, source, question)
            held = best.get(source.number)
            if held is None:
                order.append(source.number)
            if held is None or (RANK[graded.support], graded.cover) > (
                RANK[held[0].support],
                held[0].cover,
            ):
                best[source.number] = (graded, source)
    declined = declines(text)
    attributed = False
    attributed_to: list[tuple[Claim, int]] = []
    if not best and not declined:
        for claim in claims:
            held_by = [
                (g, s)
                for s in sources
                if (g := grade(claim.text, s, question)).cover >= ATTRIBUTE_AT
                or types_exactly(claim.text, s, question)
            ]
            if not held_by:
                continue
            # A claim that names a note ("as agreed in the Flat Deposit Agreement") cites it in
            # words: among the sources that hold the claim, that note's come first.
            graded, source = max(held_by, key=lambda g: (_names(claim.text, g[1]), g[0].cover))
            attributed_to.append((claim, source.number))
            if source.number not in best:
                best[source.number] = (graded, source)
                order.append(source.number)
                attributed = True
    citations = [
        Citation(
            ref=source.ref,
            item_id=source.item.item_id,
            episode_id=source.item.episode_id,
            quote=graded.quote,
            support=graded.support,
            path=note_path(source.item),
        )
        for graded, source in (best[n] for n in order)
    ]
    grounded = cited - len(dropped)
    if attributed:
        cited = grounded = len(citations)
    typed_from = [s for _, s in best.values()] if attributed else []
    to_type = lines_to_type(
        [
            (claim.text, [(s.ref, s.excerpt) for s in dict.fromkeys(claim.named or typed_from)])
            for claim in claims
        ],
        text,
    )
    return Reading(
        answer=rewrite(numbered(text, attributed_to) if attributed else text, sources),
        citations=citations,
        report=GroundingReport(
            cited=cited,
            grounded=grounded,
            dropped=tuple(dropped),
            specifics=checked.specifics,
            dropped_claims=checked.dropped,
        ),
        declined=declined,
        support=max((g.cover for g, _ in best.values()), default=0.0),
        attributed=attributed,
        reanchored=reanchored,
        claims=tuple(claim.text for claim in claims),
        unfounded_money=any(
            _unfounded_money(claim, claim.named or [s for _, s in best.values()], sources)
            for claim in claims
        ),
        borrowed_figure=any(borrows_figure(claim.text, sources) for claim in claims),
        lists_sources=lists_sources(text, sources),
        specifics=checked.specifics,
        dropped_claims=checked.dropped,
        main_unsupported=checked.main_unsupported,
        unanswered_parts=checked.unanswered,
        raw=raw,
        to_type=to_type,
    )


def numbered(text: str, attributed: Sequence[tuple[Claim, int]]) -> str:
    """``text`` with the number of the source each uncited sentence was attributed to written
    after it, as the model should have ("Ruby 3.4 added `it`. [1]"), so the answer shows its
    citations where they stand; one number after a run of sentences of one source, and none
    inside a code block (it would become code)."""
    marks: list[tuple[int, int]] = []
    for at, (claim, number) in enumerate(attributed):
        if at + 1 < len(attributed) and attributed[at + 1][1] == number:
            continue  # the next sentence's number vouches for this one too
        end = claim.span[1]
        while end > 0 and text[end - 1].isspace():
            end -= 1
        if text[:end].count("```") % 2 == 0:
            marks.append((end, number))
    for end, number in sorted(marks, reverse=True):
        text = f"{text[:end]} [{number}]{text[end:]}"
    return text


def read_reply(
    prose: str,
    citations_tail: str,
    sources: Sequence[Source],
    question: str = "",
    said: str = "",
) -> Reading:
    """Reads a reply to ``question``: its numbers first; else a ``@@CITATIONS@@`` JSON tail,
    which larger models trained on the chat format may write and which is policed by SPEC
    B10's table; else sources attributed to uncited sentences that one of them plainly
    holds."""
    reading = read(prose, sources, question, said)
    if (reading.citations and not reading.attributed) or not citations_tail.strip():
        return reading
    citations, policed = police(parse_citations(citations_tail), [s.item for s in sources])
    report = dataclasses.replace(
        policed,
        specifics=reading.report.specifics,
        dropped_claims=reading.report.dropped_claims,
    )
    if not citations and reading.attributed:
        return reading
    return Reading(
        answer=reading.answer,
        citations=citations,
        report=report,
        declined=reading.declined,
        support=1.0 if citations else 0.0,
        attributed=False,
        claims=reading.claims,
        specifics=reading.specifics,
        dropped_claims=reading.dropped_claims,
        main_unsupported=reading.main_unsupported,
        unanswered_parts=reading.unanswered_parts,
        raw=reading.raw,
        to_type=reading.to_type,
    )


def _names(claim: str, source: Source) -> bool:
    """Whether ``claim`` names ``source``'s note by its whole title."""
    title = squash(source.item.title) if source.item.kind == "chunk" else ""
    return bool(title) and re.search(rf"(?<!\w){re.escape(title)}(?!\w)", squash(claim)) is not None


def _unfounded_money(claim: Claim, cited: Sequence[Source], sources: Sequence[Source]) -> bool:
    """Whether the claim gives an amount of money that the sources it cites (those attributed
    to it when it wrote no number) write only as a measure ("$4" from "brake pads at 4 mm"), or
    that no source shown holds at all."""
    for amount in money(claim.text):
        named = [f"{s.item.title} {s.item.text}" for s in dict.fromkeys(cited)]
        if named and all(only_measured(amount, text) for text in named):
            return True
        if not any(amount in terms(f"{s.item.title} {s.item.text}") for s in sources):
            return True
    return False

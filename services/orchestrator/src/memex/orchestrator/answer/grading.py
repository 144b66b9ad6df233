"""Grading a claim against one source (issue 10): the quote is the sentence of the source's
excerpt that best supports the claim, and the support label is graded from how much of the claim
that sentence holds (figures weigh double): verbatim when the claim's words are the source's,
paraphrase when most of them are there, inference otherwise. A figure of the claim that the
source does not hold anywhere leaves it an inference.

Also here, as the reading and the re-anchoring weigh them: the thresholds (``SUPPORTED_AT``,
``ATTRIBUTE_AT``), the labels' ranks, what the model was shown of a source (``shown_terms``), and
the checks on a claim's figures (``figures``, ``borrows_figure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.answer.claim_check import (
    holds,
    specifics,
)
from memex.orchestrator.answer.claim_check import (
    occurs_in as _occurs_in,
)
from memex.orchestrator.answer.lexical import (
    coverage,
    is_number,
    money,
    only_measured,
    squash,
    strip_list_mark,
    terms,
)
from memex.orchestrator.answer.sources import Source, dateline
from memex.orchestrator.memory.items import Support

QUOTE_CAP = 300
VERBATIM_AT = 0.9
PARAPHRASE_AT = 0.5
# A claim no cited sentence covers this well is not taken as supported; nor is an uncited
# sentence attributed to a source below ATTRIBUTE_AT.
SUPPORTED_AT = 0.34
ATTRIBUTE_AT = 0.5


@dataclass(frozen=True)
class Grade:
    """How well one source supports a claim: the label, how much of the claim it covers, and
    the sentence quoted for it."""

    support: Support
    cover: float
    quote: str


def grade(claim: str, source: Source, question: str = "") -> Grade:
    """How well ``source`` (its title and excerpt) supports ``claim``, with the sentence that
    supports it best. The words the claim repeats from ``question`` are not weighed: "The
    built-in that copies an object deeply is `structuredClone`" claims only the name. A figure
    of the claim (an amount, a date, a time) that the source does not hold anywhere, title and
    date included, leaves it an inference however many of its words are there; so does an
    amount of money that the source writes only as a measure ("$4" from "brake pads at 4 mm").
    (What a claim gives to type, held exactly, chooses the source of an uncited claim,
    ``types_exactly``, but does not raise its grade: "The Wi-Fi password is `Octopus`" from a
    note that writes Octopus as the network's name was graded a paraphrase and answered.)"""
    claim_terms = terms(claim)
    asked = set(terms(question))
    claim_terms = [t for t in claim_terms if t not in asked or is_number(t)] or claim_terms
    best_cover, best_quote = 0.0, ""
    for part in source.segments:
        cover = coverage(claim_terms, terms(part.text))
        if cover > best_cover:
            best_cover, best_quote = cover, strip_list_mark(part.text)
    # The model reads a source's title and date in its header ("[1] Kirkstall Half (11 October
    # 2026)"; "(due 10 December 2026)" for an inbox item).
    heading = _heading(source)
    whole = coverage(claim_terms, terms(f"{heading} {source.excerpt}"))
    quote = best_quote or strip_list_mark(source.excerpt)
    if len(quote) > QUOTE_CAP:
        quote = quote[:QUOTE_CAP].rsplit(" ", 1)[0]
    cover = max(best_cover, whole)
    held = shown_terms(source)
    if any(is_number(term) and term not in held for term in claim_terms) or any(
        only_measured(amount, f"{heading} {source.excerpt}") for amount in money(claim)
    ):
        return Grade("inference", cover, quote)
    bare = squash(claim).strip(" .")
    verbatim = bare and (bare in squash(source.excerpt) or bare in squash(source.shown))
    if verbatim or best_cover >= VERBATIM_AT:
        return Grade("verbatim", cover, quote)
    if cover >= PARAPHRASE_AT:
        return Grade("paraphrase", cover, quote)
    return Grade("inference", cover, quote)


def types_exactly(claim: str, source: Source, question: str) -> bool:
    """Whether ``claim`` gives something a person types (a command, a flag, an identifier, a
    key, a path, a version), beyond what the question writes, and ``source`` holds all of it."""
    typed = [
        (kind, text)
        for kind, text in specifics(claim)
        if kind not in ("figure", "name") and not _occurs_in(text, question)
    ]
    return bool(typed) and all(holds(kind, text, source.checkable) for kind, text in typed)


def _heading(source: Source) -> str:
    """The title and date the model read in ``source``'s header."""
    return f"{source.item.title} {dateline(source.item)}"


def shown_terms(source: Source) -> set[str]:
    """Every term the model was shown of ``source``: its header, its date, its excerpt."""
    return set(terms(f"{_heading(source)} {source.item.date} {source.excerpt}"))


def borrows_figure(claim: str, sources: Sequence[Source]) -> bool:
    """Whether ``claim`` is told in the words of one shown note (``PARAPHRASE_AT`` of them or
    more) but gives figures that note does not hold, and no shown note holds its words and its
    figures together. Several chunks of a note shown count as the note. "Graham returns £800,
    less £120 for the carpet" borrows nothing: the deposit note it is told from holds £800."""
    claim_terms = terms(claim)
    given = figures([claim])
    if not given:
        return False
    notes: dict[str, set[str]] = {}
    for source in sources:
        key = source.item.episode_id if source.item.kind == "chunk" else ""
        notes.setdefault(key or source.item.item_id, set()).update(shown_terms(source))
    told = [(coverage(claim_terms, held), held) for held in notes.values()]
    if any(given <= held and cover >= PARAPHRASE_AT for cover, held in told):
        return False
    cover, held = max(told, key=lambda pair: pair[0], default=(0.0, set()))
    return cover >= PARAPHRASE_AT and not given & held


RANK: dict[Support, int] = {"verbatim": 2, "paraphrase": 1, "inference": 0}


def figures(claims: Sequence[str]) -> set[str]:
    """The figures (amounts, dates, times) that ``claims`` give, as terms."""
    return {term for claim in claims for term in terms(claim) if is_number(term)}

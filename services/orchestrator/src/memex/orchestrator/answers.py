"""Reading a numbered answer (issue 10): source numbers → checked citations, mechanically.

The model writes prose and cites sources by number in line ("£48 a year [2]"); that is all a
0.5B model has to get right. memex does the rest: each number is grounded (it must name a
source that was shown, SPEC B2), the quote is the sentence of the cited excerpt that best
supports the claim, and the support label is graded from how much of the claim that sentence
holds (figures weigh double): verbatim when the claim's words are the source's, paraphrase when
most of them are there, inference otherwise. Models that still write ``[[Note Title]]`` are
understood too.

Small models often copy a fact right and then write the number of a neighbouring source
("2:04:37 [4]" when [1] holds it). A claim that its named sources support only by inference,
but another shown source supports, is re-anchored to that source, in the citations and in the
answer's text; the reading counts how many were moved.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memex.orchestrator.citations import parse_citations, police
from memex.orchestrator.claim_check import (
    NUMBER_WORD as _NUMBER_WORD,
)
from memex.orchestrator.claim_check import (
    Shown,
    SpecificKind,
    holds,
    specifics,
    unsupported,
    verdicts,
)
from memex.orchestrator.claim_check import (
    occurs_in as _occurs_in,
)
from memex.orchestrator.items import CheckedSpecific, Citation, GroundingReport, Support, note_path
from memex.orchestrator.lexical import (
    Segment,
    coverage,
    is_number,
    money,
    names,
    only_measured,
    segments,
    squash,
    strip_list_mark,
    terms,
    topical,
)
from memex.orchestrator.question_parts import question_parts
from memex.orchestrator.sources import Source, dateline
from memex.orchestrator.stream_filter import RepeatGuard, StreamFilter
from memex.orchestrator.to_type import lines_to_type

QUOTE_CAP = 300
VERBATIM_AT = 0.9
PARAPHRASE_AT = 0.5
# A claim no cited sentence covers this well is not taken as supported; nor is an uncited
# sentence attributed to a source below ATTRIBUTE_AT.
SUPPORTED_AT = 0.34
ATTRIBUTE_AT = 0.5

_NUMBERS = r"\^?\d{1,2}(?:\s*(?:,|;|and|&|-|\u2013)\s*\^?\d{1,2})*"
MARKER = re.compile(
    rf"\[\s*(?:(?:sources?|refs?|excerpts?|notes?)\s*)?({_NUMBERS})\s*\]"
    rf"|\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]",
    re.IGNORECASE,
)
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")
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
    # The claim check (``claim_check.py``): every specific the answer stated, with its verdict,
    # and the sentences dropped because a specific of theirs is in no cited source.
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
    # (``to_type.py``): what the person types, verbatim.
    to_type: tuple[tuple[str, str], ...] = ()


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


def _cited(match: re.Match[str], sources: Sequence[Source]) -> tuple[list[Source], list[str]]:
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


def _refs(match: re.Match[str], sources: Sequence[Source]) -> str:
    found, _ = _cited(match, sources)
    if found:
        return " ".join(dict.fromkeys(s.ref for s in found))
    return match.group(2) or ""


def rewrite(text: str, sources: Sequence[Source]) -> str:
    """``text`` with every marker replaced by the refs it names; markers naming nothing shown
    are removed (a wikilink keeps its words, not its brackets), so no fabricated citation
    reaches the reader."""

    return _tidy(MARKER.sub(lambda match: _refs(match, sources), text)).strip()


def _tidy(text: str) -> str:
    """The spacing a removed marker leaves ("is [7]." → "is ."), closed up; a ref repeated
    right after itself kept once. Used on whole answers and on streamed pieces alike, so the
    reader sees what is stored."""
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", re.sub(r"[ \t]{2,}", " ", text))
    return re.sub(r"(\[\[[^\]]+\]\])(?:\s+\1)+", r"\1", text)


def declines(text: str) -> bool:
    """Whether the answer opens by saying the sources do not answer the question."""
    parts = segments(text.strip())
    return not parts or bool(_DECLINED.search(parts[0].text))


@dataclass(frozen=True)
class _Grade:
    support: Support
    cover: float
    quote: str


def grade(claim: str, source: Source, question: str = "") -> _Grade:
    """How well ``source`` (its title and excerpt) supports ``claim``, with the sentence that
    supports it best. The words the claim repeats from ``question`` are not weighed: "The
    built-in that copies an object deeply is `structuredClone`" claims only the name. A figure
    of the claim (an amount, a date, a time) that the source does not hold anywhere, title and
    date included, leaves it an inference however many of its words are there; so does an
    amount of money that the source writes only as a measure ("$4" from "brake pads at 4 mm").
    (What a claim gives to type, held exactly, chooses the source of an uncited claim,
    ``_types_exactly``, but does not raise its grade: "The Wi-Fi password is `Octopus`" from a
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
    held = _held(source)
    if any(is_number(term) and term not in held for term in claim_terms) or any(
        only_measured(amount, f"{heading} {source.excerpt}") for amount in money(claim)
    ):
        return _Grade("inference", cover, quote)
    bare = squash(claim).strip(" .")
    verbatim = bare and (bare in squash(source.excerpt) or bare in squash(source.shown))
    if verbatim or best_cover >= VERBATIM_AT:
        return _Grade("verbatim", cover, quote)
    if cover >= PARAPHRASE_AT:
        return _Grade("paraphrase", cover, quote)
    return _Grade("inference", cover, quote)


def _types_exactly(claim: str, source: Source, question: str) -> bool:
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


def _held(source: Source) -> set[str]:
    """Every term the model was shown of ``source``: its header, its date, its excerpt."""
    return set(terms(f"{_heading(source)} {source.item.date} {source.excerpt}"))


def _borrows_figure(claim: str, sources: Sequence[Source]) -> bool:
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
        notes.setdefault(key or source.item.item_id, set()).update(_held(source))
    told = [(coverage(claim_terms, held), held) for held in notes.values()]
    if any(given <= held and cover >= PARAPHRASE_AT for cover, held in told):
        return False
    cover, held = max(told, key=lambda pair: pair[0], default=(0.0, set()))
    return cover >= PARAPHRASE_AT and not given & held


def _lists_sources(text: str, sources: Sequence[Source]) -> bool:
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


_RANK: dict[Support, int] = {"verbatim": 2, "paraphrase": 1, "inference": 0}


def _names(claim: str, source: Source) -> bool:
    """Whether ``claim`` names ``source``'s note by its whole title."""
    title = squash(source.item.title) if source.item.kind == "chunk" else ""
    return bool(title) and re.search(rf"(?<!\w){re.escape(title)}(?!\w)", squash(claim)) is not None


_LEADING_MARKERS = re.compile(rf"(?:\s*(?:{MARKER.pattern}))+", re.IGNORECASE)


def _pieces(text: str) -> list[Segment]:
    """The answer's sentences, with numbers that open a sentence ("... January. [1] Ron")
    split off into a piece of their own: they close the sentence before."""
    out: list[Segment] = []
    for part in segments(text):
        leading = _LEADING_MARKERS.match(part.text)
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
class _Claim:
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
        found, missing = _cited(match, sources)
        named.extend(found)
        dropped.extend(missing)
        if found:
            spans.append((piece.start + match.start(), piece.start + match.end()))
    return named, spans


def _claims(text: str, sources: Sequence[Source]) -> tuple[list[_Claim], list[str]]:
    """Each sentence of the answer with the sources its markers name; a sentence that is only
    markers ("[1][2]") belongs to the sentence before it. An answer that opens with a marker
    writes its numbers before what they vouch for ("[1] Ada was born on 14 August 2025."):
    then a number belongs to the sentences after it, up to the next number."""
    if _LEADING_MARKERS.match(text):
        return _prefixed_claims(text, sources)
    claims: list[_Claim] = []
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
            claims.append(_Claim(claim, span=(piece.start, piece.end)))
            targets = claims[len(claims) - 1 - uncited :]
        if named:
            for target in targets:
                target.named.extend(named)
                target.markers.extend(spans)
            uncited = 0
        elif terms(claim):
            uncited += 1
    return claims, dropped


def _prefixed_claims(text: str, sources: Sequence[Source]) -> tuple[list[_Claim], list[str]]:
    """``_claims`` for an answer whose numbers come before the sentences they vouch for."""
    claims: list[_Claim] = []
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
            _Claim(
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


def _reanchor(claim: _Claim, sources: Sequence[Source], question: str) -> None:
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
    if not named or not _says_more(claim.text, question):
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
        and (not words or coverage(words, _held(s)) >= PARAPHRASE_AT)
        and (not lacking or holds_all(s))
    ]
    best = max(graded, key=lambda pair: (_RANK[pair[0].support], pair[0].cover), default=None)
    if best is not None and best[0].support != "inference":
        claim.named, claim.moved = [best[1]], True


def _score(claim: str, source: Source, question: str) -> tuple[int, int, float]:
    """How well ``source`` holds ``claim``: how many of its specifics, then its grade."""
    graded = grade(claim, source, question)
    return len(_specifics_held(specifics(claim), source)), _RANK[graded.support], graded.cover


def _specifics_held(
    found: Sequence[tuple[SpecificKind, str]], source: Source
) -> list[tuple[SpecificKind, str]]:
    """Those of the specifics ``found`` that ``source`` holds, as the claim check reads it."""
    return [(kind, text) for kind, text in found if holds(kind, text, source.checkable)]


def _idle_sources(claims: Sequence[_Claim], question: str, text: str) -> set[int]:
    """The numbers of the sources that back no sentence of the answer themselves: each time
    they are named, in one run of numbers beside other sources ("... run `df -i`. [1][2]", a
    run after several sentences naming every source used anywhere), another source of the run
    holds the sentence better, and they hold nothing of it (no specific, no half of its other
    words) that the better one lacks; or they are named only by sentences that restate the
    question (a number closing those and a sentence moved to another source, ``_reanchor``). A
    citation says where a claim comes from; a note named only because it stood beside the right
    one in the briefing is not one. Numbers written at different places in a sentence ("£800
    [1], and the boiler got fixed [2]") each vouch for their own part: those all stand."""
    earned: set[int] = set()
    named_anywhere: set[int] = set()
    for claim in claims:
        named = list(dict.fromkeys(claim.named))
        named_anywhere |= {s.number for s in named}
        if not _says_more(claim.text, question) or _about_sources(claim.text):
            continue  # it restates the question, or speaks of the sources: it rests on none
        if len(named) < 2 or not _one_run(claim.markers, text):
            earned |= {s.number for s in named}
            continue
        scores = {s.number: _score(claim.text, s, question) for s in named}
        top = max(scores.values())
        if top[:2] == (0, _RANK["inference"]) and top[2] < SUPPORTED_AT:
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
    held = set().union(*(_held(s) for s in leaders))
    asked = set(terms(question))
    rest = [t for t in terms(claim) if t not in held and t not in asked]
    return len(rest) >= 2 and coverage(rest, _held(source)) >= PARAPHRASE_AT


def _without(text: str, sources: Sequence[Source], idle: set[int]) -> str:
    """``text`` with the numbers of the ``idle`` sources taken out of its markers (a marker
    left naming nothing goes)."""

    def keep(match: re.Match[str]) -> str:
        found, _ = _cited(match, sources)
        if not any(s.number in idle for s in found):
            return match.group(0)
        left = [s.number for s in found if s.number not in idle]
        return f"[{', '.join(str(n) for n in dict.fromkeys(left))}]" if left else ""

    return MARKER.sub(keep, text)


def _renumbered(text: str, claims: Sequence[_Claim]) -> str:
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


@dataclass(frozen=True)
class _Checked:
    """An answer after the claim check: the sentences kept, and what was found."""

    text: str
    specifics: tuple[CheckedSpecific, ...]
    dropped: tuple[str, ...]
    main_unsupported: bool
    unanswered: tuple[str, ...]  # parts of a compound question whose answer was cut
    claims: list[_Claim]  # the kept text's sentences, re-anchored, for ``read`` to grade
    missing: list[str]  # the kept text's markers that name no source shown


def check_claims(
    text: str, sources: Sequence[Source], question: str = "", said: str = ""
) -> _Checked:
    """The claim check (``claim_check.py``): each sentence's specifics against the sources the
    answer cites (all shown sources when it cites none: attribution then finds its sources), a
    sentence with an unsupported specific cut from the answer. Cutting a sentence may take the
    only citation of a source another sentence relied on, so the check runs again over what is
    left until nothing more is cut. What the question or ``said`` (a chat's earlier messages)
    writes is restated, not claimed."""
    context = f"{question}\n{said}" if said else question
    found: list[CheckedSpecific] = []
    dropped: list[str] = []
    main_unsupported = False
    echoed = [claim.span for claim in _claims(text, sources)[0] if _echoes(claim.text, question)]
    if echoed:
        text = _cut(text, echoed)
    for round_ in range(4):
        claims, _ = _claims(text, sources)
        for claim in claims:
            _reanchor(claim, sources, question)
        named = [s for claim in claims for s in claim.named] or list(sources)
        cited = [s.checkable for s in dict.fromkeys(named)]
        fenced = _fenced(text)
        checked = [
            (claim, verdicts(claim.text, cited, context, code=_within(claim.span, fenced)))
            for claim in claims
        ]
        failing = [claim for claim, found_here in checked if unsupported(found_here)]
        trimmed = _trim_asides(text, checked, cited, context)
        if trimmed != text:  # an aside held the only unsupported specifics: it goes, not all
            found += [s for _, here in checked for s in unsupported(here) if s.text not in trimmed]
            text = trimmed
            continue
        if round_ == 0:
            main = next((c for c in claims if _says_more(c.text, question)), None)
            main_unsupported = main is not None and main in failing
        if not failing:
            found += [specific for _, found_here in checked for specific in found_here]
            break
        found += [s for claim, found_here in checked if claim in failing for s in found_here]
        dropped += [claim.text for claim in failing]
        text = _cut(text, [claim.span for claim in failing])
    unanswered: tuple[str, ...] = ()
    parts = question_parts(question)
    final, missing = _claims(text, sources)
    for claim in final:
        _reanchor(claim, sources, question)
    kept = [c.text for c in final if _says_more(c.text, question)]
    if main_unsupported and len(parts) > 1 and kept:
        # One part's answer was cut, another's stands: the answer stands, and says plainly
        # which part the notes do not answer rather than abstaining on the whole.
        main_unsupported = False
        answered = {_part_of(claim, parts) for claim in kept}
        unanswered = tuple(
            dict.fromkeys(
                part for claim in dropped if (part := _part_of(claim, parts)) not in answered
            )
        )
    if dropped and not kept:
        main_unsupported = True
    return _Checked(
        text,
        tuple(dict.fromkeys(found)),
        tuple(dropped),
        main_unsupported,
        unanswered,
        final,
        missing,
    )


_ASIDE = re.compile(r"\s*\([^()]*\)")


def _trim_asides(
    text: str,
    checked: Sequence[tuple[_Claim, list[CheckedSpecific]]],
    cited: Sequence[Shown],
    context: str,
) -> str:
    """``text`` without the bracketed asides that hold a failing sentence's unsupported
    specifics, where the rest of that sentence then stands ("shift handover notes (designed by
    Maya)" keeps the feature, loses the name no source gives); ``text`` unchanged when no
    sentence is saved that way."""
    cuts: list[tuple[int, int]] = []
    for claim, found in checked:
        bad = unsupported(found)
        if not bad:
            continue
        lo, hi = claim.span
        asides = [
            (lo + m.start(), lo + m.end())
            for m in _ASIDE.finditer(text[lo:hi])
            if any(s.text in m.group() for s in bad)
        ]
        rest = _cut(text[lo:hi], [(a - lo, b - lo) for a, b in asides])
        if asides and not unsupported(verdicts(MARKER.sub(" ", rest), cited, context)):
            cuts += asides
    return _cut(text, cuts) if cuts else text


def _echoes(claim: str, question: str) -> bool:
    """Whether ``claim`` is a question the person asked, copied into the answer ("What had
    actually run out?"): it asks, and every word of it is the question's. It claims nothing."""
    said = terms(claim)
    return claim.rstrip().endswith("?") and bool(said) and set(said) <= set(terms(question))


def _part_of(claim: str, parts: Sequence[str]) -> str:
    """The part of a compound question that ``claim`` answers: the one it shares most words
    with (the first on a tie)."""
    said = set(terms(claim))
    return max(parts, key=lambda part: len(said & set(terms(part))))


def unaddressed_parts(question: str, reading: Reading) -> list[str]:
    """The parts of a compound question that no sentence of ``reading`` answers, nor names as
    unanswered: a small model asked "what were they set to, and what command stopped that?"
    answers the first part and stops. A sentence answers the part it shares most words with
    (every part it shares them with equally), when it says more than that part. A part with no
    word of its own ("..., and why?") is answered by a sentence beyond one for each other part."""
    parts = question_parts(question)
    if len(parts) < 2 or reading.declined:
        return []
    claims = [claim for claim in reading.claims if _adds(claim, question)]
    answered: set[str] = set()
    for claim in claims:
        said = set(terms(claim))
        shared = {part: len(said & set(terms(part))) for part in parts}
        most = max(shared.values())
        answered |= {part for part, n in shared.items() if most and n == most}
    wordless = [part for part in parts if not terms(part)]
    if len(claims) >= len(parts):
        answered |= set(wordless)
    return [p for p in parts if p not in answered and p not in reading.unanswered_parts]


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)


def _fenced(text: str) -> list[tuple[int, int]]:
    """The bodies of the fenced code blocks in ``text``: each line there is code as a whole."""
    return [match.span(2) for match in _FENCE.finditer(text)]


def _within(span: tuple[int, int], regions: Sequence[tuple[int, int]]) -> bool:
    return any(lo <= span[0] and span[1] <= hi for lo, hi in regions)


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without ``spans``, the spacing they leave closed up."""
    out, at = [], 0
    for start, end in sorted(spans):
        out.append(text[at:start])
        at = end
    out.append(text[at:])
    return re.sub(r"[ \t]+\n", "\n", re.sub(r"[ \t]{2,}", " ", "".join(out))).strip()


def read(text: str, sources: Sequence[Source], question: str = "", said: str = "") -> Reading:
    """Grounds and grades a numbered answer to ``question`` against the sources it was
    written from, after the claim check has cut every sentence that states a specific no
    cited source holds."""
    raw = text
    checked = check_claims(text, sources, question, said)
    text, claims, dropped = checked.text, checked.claims, checked.missing
    reanchored = sum(claim.moved for claim in claims)
    idle = _idle_sources(claims, question, text)
    if reanchored:
        text = _renumbered(text, claims)
    if idle:
        text = _without(text, sources, idle)
        for claim in claims:
            claim.named = [s for s in claim.named if s.number not in idle]
    best: dict[int, tuple[_Grade, Source]] = {}
    order: list[int] = []
    cited = len(dropped)
    for claim in claims:
        for source in dict.fromkeys(claim.named):
            cited += 1
            graded = grade(claim.text, source, question)
            held = best.get(source.number)
            if held is None:
                order.append(source.number)
            if held is None or (_RANK[graded.support], graded.cover) > (
                _RANK[held[0].support],
                held[0].cover,
            ):
                best[source.number] = (graded, source)
    declined = declines(text)
    attributed = False
    if not best and not declined:
        for claim in claims:
            held_by = [
                (g, s)
                for s in sources
                if (g := grade(claim.text, s, question)).cover >= ATTRIBUTE_AT
                or _types_exactly(claim.text, s, question)
            ]
            if not held_by:
                continue
            # A claim that names a note ("as agreed in the Flat Deposit Agreement") cites it in
            # words: among the sources that hold the claim, that note's come first.
            graded, source = max(held_by, key=lambda g: (_names(claim.text, g[1]), g[0].cover))
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
        answer=rewrite(text, sources),
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
        borrowed_figure=any(_borrows_figure(claim.text, sources) for claim in claims),
        lists_sources=_lists_sources(text, sources),
        specifics=checked.specifics,
        dropped_claims=checked.dropped,
        main_unsupported=checked.main_unsupported,
        unanswered_parts=checked.unanswered,
        raw=raw,
        to_type=to_type,
    )


def strength(reading: Reading) -> int:
    """How well ``reading``'s best-supported citation holds its claim: 2 verbatim, 1 paraphrase,
    0 inference; -1 when it cites nothing."""
    return max((_RANK[c.support] for c in reading.citations), default=-1)


def figures(claims: Sequence[str]) -> set[str]:
    """The figures (amounts, dates, times) that ``claims`` give, as terms."""
    return {term for claim in claims for term in terms(claim) if is_number(term)}


def _unfounded_money(claim: _Claim, cited: Sequence[Source], sources: Sequence[Source]) -> bool:
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


_YES_NO_QUESTION = re.compile(
    r"^\s*(?:is|are|was|were|am|do|does|did|have|has|had|can|could|will|would|should|shall)\b",
    re.IGNORECASE,
)


# Words that point at the sources instead of saying what they hold: "I am in the office on the
# following days: [1], [2], [3]" lists source numbers as its answer and says nothing.
_POINTING = frozenset(
    terms("following follows listed mentioned below above sources notes excerpts")
)
_YES_NO = frozenset(terms("yes no"))


def informative(question: str, reading: Reading) -> bool:
    """Whether the answer says anything the question did not. "I studied at university [2]" to
    "What did I study at university?" only restates the question, whatever it cites; so does
    "My blood type is A", and so does "on the following days: [1], [2]", which points at
    sources instead of answering. A yes/no question may be answered by "Yes [1]"."""
    if reading.lists_sources:
        return False
    if _YES_NO_QUESTION.match(question):
        return True
    return any(_says_more(claim, question) for claim in reading.claims)


def _adds(claim: str, question: str) -> bool:
    """Whether ``claim`` says more than ``question``: a word, or a specific the question does not
    write ("The one-character shortcut for force-pushing main is `+`" adds only the `+`)."""
    return _says_more(claim, question) or any(
        not _occurs_in(text, question) for _, text in specifics(claim)
    )


def _says_more(claim: str, question: str) -> bool:
    """Whether ``claim`` has a word that neither ``question`` nor pointing at sources has
    ("yes" and "no" aside: on their own they hold no fact a source could)."""
    said = set(terms(question)) | _POINTING | _YES_NO
    return any(term not in said for term in terms(claim))


def on_topic(question: str, reading: Reading, sources: Sequence[Source]) -> bool:
    """Whether the sources an answer cites share any content word with the question (titles
    included). An answer to "what car do I drive?" resting on a note about a deposit is a small
    model answering anyway, from whatever it was shown; it is not grounded in the notes. Common
    verbs do not count (``topical``): "paid" in a deposit note is not about contents insurance.
    A question that names something ("What rating did I give Station Eleven?") needs a cited
    source that mentions one of its names (``names``), or the other names the header gave it:
    "rating: 3" in another book's note is not about that book."""
    cited = [s for s in sources if s.item.item_id in {c.item_id for c in reading.citations}]
    seen = {term for s in cited for term in terms(f"{s.item.title} {s.excerpt} {s.item.path}")}
    mentioned = {term for text in cited_notes(reading, sources) for term in terms(text)}
    named = names(question)
    if named and not any(len(name) <= 2 or _mentions(name, mentioned) for name in named):
        return False
    wanted = topical(terms(question))
    if not wanted:
        return True
    if not any(_mentions(term, seen) for term in wanted):
        return False
    if _bare(question, reading):
        # A bare value ("$1,184.62", "Fundy Built Homes") says nothing of what it is: it
        # answers the question's subject only from a note about that subject. The tax return's
        # refund shares one word of five with "the refund for the cancelled whale-watching trip".
        covered = sum(_mentions(term, mentioned) for term in wanted)
        return covered >= BARE_TOPIC_SHARE * len(wanted)
    return True


def cited_notes(reading: Reading, sources: Sequence[Source]) -> list[str]:
    """The text of each note ``reading`` cites, as shown: its title, aliases, folder and every
    chunk of it in the briefing, not only the part of the chunk cited ("Mom." opens Irene's
    note; her "Birthday gifts" table, the chunk cited, never says it; "mac/prevent-sleep..." is
    about a Mac)."""
    ids = {c.item_id for c in reading.citations}
    cited = [s for s in sources if s.item.item_id in ids]
    notes = {s.item.episode_id for s in cited if s.item.episode_id}
    return [
        f"{s.item.title} {' '.join(s.also_called)} {s.item.text} {s.item.path}"
        for s in sources
        if s in cited or s.item.episode_id in notes
    ]


# The least share of a question's topical terms that the cited notes of a bare answer (a value
# and no words of its own) must mention (``on_topic``).
BARE_TOPIC_SHARE = 0.25
_CAPITALISED_WORD = re.compile(r"\b[A-Z][\w'\u2019-]*")


def _bare(question: str, reading: Reading) -> bool:
    """Whether every sentence of the answer adds to the question only values: figures and
    capitalised names, wherever they stand ("Fundy Built Homes", "$1,184.62")."""
    asked = set(terms(question))
    for claim in reading.claims:
        valued = {t for word in _CAPITALISED_WORD.findall(claim) for t in terms(word)}
        if any(t not in asked and t not in valued and not is_number(t) for t in terms(claim)):
            return False
    return bool(reading.claims)


def _mentions(term: str, mentioned: set[str]) -> bool:
    """Whether a term of the question is among ``mentioned``: as a term, or, three letters or
    more, as the start of one ("Mac" in "macOS"). (A name of one or two letters, "JS", is an
    abbreviation a note spells out as often as not, "JavaScript": ``on_topic`` asks nothing of
    it.)"""
    return term in mentioned or (
        len(term) >= 3 and any(other.startswith(term) for other in mentioned)
    )


class RefStream:
    """Rewrites source numbers as refs in streamed text, holding back what could still become a
    marker ("[", "[1,", "[[Flat De") so no raw number fragment reaches the reader."""

    _OPEN = re.compile(r"\[\[[^\[\]]{0,120}\]?$|\[[^\[\]]{0,24}$")

    def __init__(self, sources: Sequence[Source]) -> None:
        self._sources = list(sources)
        self._held = ""

    def feed(self, text: str) -> str:
        """What can be shown now of ``text`` (after what was held back). Trailing spaces are
        held too: the next piece may open with a marker that names nothing, or with a full
        stop, and the space then goes, as it does in the stored answer (``rewrite``)."""
        buffer = self._held + text
        open_marker = self._OPEN.search(buffer)
        cut = open_marker.start() if open_marker else len(buffer)
        done = self._rewrite(buffer[:cut])
        shown = done.rstrip(" \t")
        self._held = done[len(shown) :] + buffer[cut:]
        return shown

    def finish(self) -> str:
        """Whatever was still held back, rewritten."""
        rest, self._held = self._held, ""
        return self._rewrite(rest)

    def _rewrite(self, text: str) -> str:
        return _tidy(MARKER.sub(lambda match: _refs(match, self._sources), text))


class ClaimGate:
    """Holds a streamed sentence back from its first word that could be a specific (a figure, a
    code span, a flag, a name: anything but a plain word) until the sentence and the numbers
    after it are complete, then lets it through only if the claim check finds every specific
    in a source the answer has cited so far (all shown sources while it has cited none). So no
    unchecked specific reaches the reader; plain words still stream as they come. The stored
    answer is checked again as a whole (``read``)."""

    # A sentence is done at its end mark, with the numbers that close it ("fact. [2]"), once
    # the next sentence has begun; or at a line break.
    _END = re.compile(rf"[.!?](?:\s*(?:{MARKER.pattern}))*(?=\s+[^\s\[])|\n", re.IGNORECASE)
    _PLAIN = re.compile(r"[a-z]+(?:['\u2019-][a-z]+)*[,;:.!?]?|[A-Z][a-z]*(?:'[a-z]+)?[,;:]?")

    def __init__(self, sources: Sequence[Source], question: str = "", said: str = "") -> None:
        self._sources = list(sources)
        self._context = f"{question}\n{said}" if said else question
        self._cited: list[Source] = []
        self._shown_part = ""  # the current sentence's words already let through
        self._held = ""  # the rest of the current sentence, and what came after

    def feed(self, text: str) -> str:
        """What may be shown now of ``text``."""
        self._held += text
        out = []
        while (end := self._END.search(self._held)) is not None:
            sentence, self._held = self._held[: end.end()], self._held[end.end() :]
            out.append(self._settle(sentence))
        out.append(self._plain_lead())
        return "".join(out)

    def finish(self) -> str:
        """The last sentence, if it passes the check."""
        rest, self._held = self._held, ""
        return self._settle(rest) if rest else ""

    def _plain_lead(self) -> str:
        """The plain words at the start of what is held, while nothing specific came before
        them in the sentence; the last word is kept back (it may still grow)."""
        lead = 0
        for word in re.finditer(r"\S+\s+", self._held):
            text = word.group().strip()
            opening = not self._shown_part.strip() and word.start() == 0
            if (
                not self._PLAIN.fullmatch(text)
                or (text[0].isupper() and not opening)
                or _NUMBER_WORD.fullmatch(text.strip(",;:.!?"))
            ):
                break  # from here on the sentence waits for its check
            lead = word.end()
        released, self._held = self._held[:lead], self._held[lead:]
        self._shown_part += released
        return released

    def _settle(self, held: str) -> str:
        """The held rest of a finished sentence, or "" when a specific in it is unsupported."""
        sentence = self._shown_part + held
        self._shown_part = ""
        for match in MARKER.finditer(sentence):
            self._cited += _cited(match, self._sources)[0]
        cited = [s.checkable for s in dict.fromkeys(self._cited or self._sources)]
        claim = MARKER.sub(" ", sentence)
        return "" if unsupported(verdicts(claim, cited, self._context)) else held


class ReplyStream:
    """A model's reply on its way to the reader, for ask and chat alike: ``<think>`` dropped and a
    ``@@CITATIONS@@`` tail kept apart (SPEC B9), cut at the first repeated sentence, source
    numbers shown as refs as they arrive; then read as a whole (``read``)."""

    def __init__(self, sources: Sequence[Source], question: str = "", said: str = "") -> None:
        self._sources = list(sources)
        self._question = question
        self._said = said  # a chat's earlier messages: what they write is not a new claim
        self._filter = StreamFilter()
        self._guard = RepeatGuard()
        self._gate = ClaimGate(sources, question, said)
        self._refs = RefStream(sources)
        self.looping = False
        """The model started repeating itself: stop it (close its stream), feed no more."""

    @property
    def sources(self) -> list[Source]:
        """The numbered sources the reply may cite."""
        return self._sources

    def feed(self, piece: str) -> str:
        """What the reader may see now of ``piece``."""
        visible = self._filter.feed(piece)
        if not visible or self.looping:
            return ""
        if self._guard.feed(visible):
            self.looping = True
            return ""
        return self._refs.feed(self._gate.feed(visible))

    def finish(self) -> str:
        """Whatever was still held back, once the model has stopped."""
        rest = "" if self.looping else self._filter.finish()
        if rest and self._guard.feed(rest):
            rest = ""
        return self._refs.feed(self._gate.feed(rest) + self._gate.finish()) + self._refs.finish()

    def read(self) -> Reading:
        """The whole reply, grounded and graded (``read_reply``)."""
        return read_reply(
            self._guard.kept,
            self._filter.citations_text,
            self._sources,
            self._question,
            self._said,
        )

"""The claim check over a whole answer (issue 35): each sentence's specifics are checked
(``answer/claim_check.py``) against the sources the answer cites, and a sentence that states a
specific no cited source holds is cut, or only its bracketed aside when that is where the specific
is; so is a sentence that says the opposite of its notes ("you can mix" where they write "cannot
mix", ``polarity.py``); again, until nothing more is cut. Whether the answer's main claim was cut,
and which parts of a compound question lost their only answer, are kept for the reading and ask's
abstention rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.orchestrator.answer.claim_check import Shown, specifics, unsupported, verdicts
from memex.orchestrator.answer.claims import YES_NO, Claim, claims_of, reanchor, says_more
from memex.orchestrator.answer.lexical import terms
from memex.orchestrator.answer.numbers import MARKER
from memex.orchestrator.answer.polarity import contradicts
from memex.orchestrator.answer.question_parts import question_parts
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.memory.items import CheckedSpecific


@dataclass(frozen=True)
class Checked:
    """An answer after the claim check: the sentences kept, and what was found."""

    text: str
    specifics: tuple[CheckedSpecific, ...]
    dropped: tuple[str, ...]
    main_unsupported: bool
    unanswered: tuple[str, ...]  # parts of a compound question whose answer was cut
    claims: list[Claim]  # the kept text's sentences, re-anchored, for ``read`` to grade
    missing: list[str]  # the kept text's markers that name no source shown


def check_claims(
    text: str, sources: Sequence[Source], question: str = "", said: str = ""
) -> Checked:
    """The claim check (``answer/claim_check.py``): each sentence's specifics against the sources
    the answer cites (all shown sources when it cites none: attribution then finds its sources), a
    sentence with an unsupported specific cut from the answer. Cutting a sentence may take the only
    citation of a source another sentence relied on, so the check runs again over what is left until
    nothing more is cut. What the question or ``said`` (a chat's earlier messages) writes is
    restated, not claimed."""
    context = f"{question}\n{said}" if said else question
    found: list[CheckedSpecific] = []
    dropped: list[str] = []
    main_unsupported = False
    reversed_: list[str] = []  # sentences that say the opposite of their notes
    first = claims_of(text, sources)[0]
    echoed = [claim.span for claim in first if _echoes(claim.text, question)]
    echoed += [claim.span for claim in _repeated(first)]
    if echoed:
        text = _cut(text, echoed)
    for round_ in range(4):
        claims, _ = claims_of(text, sources)
        for claim in claims:
            reanchor(claim, sources, question)
        named = [s for claim in claims for s in claim.named] or list(sources)
        notes = list(dict.fromkeys(named + _same_notes(named, sources)))
        cited = [s.checkable for s in notes]
        fenced = _fenced(text)
        checked = [
            (claim, verdicts(claim.text, cited, context, code=_within(claim.span, fenced)))
            for claim in claims
        ]
        reversed_here = [c for c in claims if contradicts(c.text, [s.excerpt for s in notes])]
        reversed_ += [claim.text for claim in reversed_here]
        failing = [
            claim
            for claim, found_here in checked
            if unsupported(found_here) or claim in reversed_here
        ]
        trimmed = _trim_asides(text, checked, cited, context)
        if trimmed != text:  # an aside held the only unsupported specifics: it goes, not all
            found += [s for _, here in checked for s in unsupported(here) if s.text not in trimmed]
            text = trimmed
            continue
        if round_ == 0:
            main = next((c for c in claims if says_more(c.text, question)), None)
            main_unsupported = main is not None and main in failing
        if not failing:
            found += [specific for _, found_here in checked for specific in found_here]
            break
        found += [s for claim, found_here in checked if claim in failing for s in found_here]
        dropped += [claim.text for claim in failing]
        text = _cut(text, [claim.span for claim in failing])
    text = _without_empty_fences(text)
    unanswered: tuple[str, ...] = ()
    parts = question_parts(question)
    final, missing = claims_of(text, sources)
    for claim in final:
        reanchor(claim, sources, question)
    kept = [c.text for c in final if says_more(c.text, question)]
    if main_unsupported and len(parts) > 1 and kept:
        # One part's answer was cut, another's stands: the answer stands, and says plainly
        # which part the notes do not answer rather than abstaining on the whole.
        main_unsupported = False
        answered = {_part_of(claim, parts) for claim in kept}
        # A part whose answer said the opposite of its notes is not named unanswered: the
        # notes answer it, and ask asks for that part again (``unaddressed_parts``).
        unanswered = tuple(
            dict.fromkeys(
                part
                for claim in dropped
                if claim not in reversed_ and (part := _part_of(claim, parts)) not in answered
            )
        )
    if dropped and not kept:
        main_unsupported = True
    return Checked(
        text,
        tuple(dict.fromkeys(found)),
        tuple(dropped),
        main_unsupported,
        unanswered,
        final,
        missing,
    )


def _same_notes(named: Sequence[Source], sources: Sequence[Source]) -> list[Source]:
    """The shown excerpts of the notes ``named`` cites: a citation names a note, not one of
    its chunks, and a sentence may join what two excerpts of one note say ("it read 129, with
    `hidapi`" citing the excerpt that names the library, the angle being in the other)."""
    notes = {s.item.episode_id for s in named if s.item.episode_id}
    return [s for s in sources if s.item.episode_id in notes]


_ASIDE = re.compile(r"\s*\([^()]*\)")


def _trim_asides(
    text: str,
    checked: Sequence[tuple[Claim, list[CheckedSpecific]]],
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


def _repeated(claims: Sequence[Claim]) -> list[Claim]:
    """The sentences that say again what an earlier one said, in no words of their own ("Yes,
    you can mix it with `_1`." after "You can mix it with `_1`."): a small model repeats
    itself, and an answer to one part of a question is read together with the first answer.
    So is a sentence that fills one slot of an earlier one's template ("Gord's quote was also
    more reliable, while ... less reliable" after "... more convenient, while ... less
    convenient"): a small model run on, saying nothing its notes say. A sentence with a
    specific of its own (`go install` after `go build`) is a step, not a repeat."""
    said: list[tuple[set[str], Claim]] = []
    out = []
    for claim in claims:
        words = set(terms(claim.text)) - YES_NO
        if len(words) >= 3 and any(
            words <= earlier or _fills_template(claim, words, before, earlier)
            for earlier, before in said
        ):
            out.append(claim)
        else:
            said.append((words, claim))
    return out


# A sentence that shares this many terms with an earlier one, opens with its words and adds at
# most one term of its own, is that sentence again with a slot filled (``_repeated``).
_TEMPLATE_SHARED = 4
_TEMPLATE_OPENING = 3
_OPENING_WORD = re.compile(r"[\w']+")


def _fills_template(claim: Claim, words: set[str], before: Claim, earlier: set[str]) -> bool:
    own = {text for _, text in specifics(claim.text)} - {t for _, t in specifics(before.text)}
    return (
        len(words & earlier) >= _TEMPLATE_SHARED
        and len(words - earlier) <= 1
        and not own
        and _opening(claim.text) == _opening(before.text)
    )


def _opening(text: str) -> list[str]:
    return [word.casefold() for word in _OPENING_WORD.findall(text)[:_TEMPLATE_OPENING]]


def _part_of(claim: str, parts: Sequence[str]) -> str:
    """The part of a compound question that ``claim`` answers: the one it shares most words
    with (the first on a tie)."""
    said = set(terms(claim))
    return max(parts, key=lambda part: len(said & set(terms(part))))


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S)


def _fenced(text: str) -> list[tuple[int, int]]:
    """The bodies of the fenced code blocks in ``text``: each line there is code as a whole."""
    return [match.span(2) for match in _FENCE.finditer(text)]


_EMPTY_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?:[ \t]*\n)*[ \t]*\1[ \t]*$", re.M)


def _without_empty_fences(text: str) -> str:
    """``text`` without the code blocks the check emptied, and without the sentence that
    announced one ("... by running the following command:"), which now points at nothing."""
    while match := _EMPTY_FENCE.search(text):
        head = text[: match.start()].rstrip()
        if head.endswith(":"):
            stop = max(head.rfind(". "), head.rfind("! "), head.rfind("? "), head.rfind("\n"))
            head = head[: stop + 1] if stop >= 0 else ""
        text = f"{head.rstrip()}\n\n{text[match.end() :].lstrip()}".strip()
    return text


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

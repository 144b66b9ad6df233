"""The parts of a compound question (issue 35): "how much ..., and why?" asks two things.

A small model answers the first part of a compound question and stops: asked how much and why,
it gives the amount. Splitting is by form, not vocabulary: a question is cut where a
conjunction is followed by a question word ("..., and why?", "... and which flag ..."), and
where one sentence of the question ends and another asks again. Naming each part in the
prompt was the first idea: measured, naming the parts in the prompt lost compound
questions on the demo vault that the plain question had answered whole. The parts are used
after the answer instead: a part whose only sentence the claim check cut is named as one the
notes do not answer (``answer/check.py``), and a part no sentence answers is asked for
in a short call of its own (``answer/judging.py``, ask's ``answer_parts``).

A part that is only a question word ("..., and why?") is asked in that call as a question of
its own, built from the part before it (``standalone``): shown the compound question and the
answer so far with "Still to answer: Why?", the 1.5B model wrote the answer so far again. A
"why" is asked as "for what reason": asked "Why did Graham agree to give back?", over the first
pass's three sources and over the whole briefing's six, the 1.5B model (temperature 0) read a
"because" into the nearest event ("he noticed a scuff ... and said 'no, that's fine'"; "he agreed
to release the money through TDS"); asked "For what reason did Graham agree to give back?", it
gave the reason the note states both times (the worktop mark on the check-in inventory).
"""

from __future__ import annotations

import re

# A question word that opens a new part after "and" / "or" / "but" (with or without a comma).
_QUESTION_WORDS = (
    r"what|which|who|whom|whose|when|where|why|how|can|could|does|did|is|are|was|were|"
    r"should|will|would"
)
_JOIN = re.compile(rf",?\s+(?:and|or|but)\s+(?=(?:{_QUESTION_WORDS})\b)", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[?.!])\s+(?=[A-Z])")
_OPENING = re.compile(rf"^(?:{_QUESTION_WORDS})\b", re.IGNORECASE)
_MAX_PARTS = 4
# Where the clause a question word asks about begins: its auxiliary verb ("How much ... did
# Graham agree to give back" asks about "did Graham agree to give back").
_AUXILIARY = re.compile(
    r"\b(?:do|does|did|is|are|was|were|am|can|could|should|will|would|has|have|had)\b",
    re.IGNORECASE,
)

# How a part that is only a question word is asked on its own, where it is not the word itself.
_ASKED_AS = {"why": "For what reason"}


def question_parts(question: str) -> list[str]:
    """The things ``question`` asks, in order: one part for a simple question. A sentence that
    asks nothing (context: "I botched a reset.") is not a part; it stays with the question."""
    parts: list[str] = []
    for sentence in _SENTENCE.split(" ".join(question.split())):
        asks = sentence.endswith("?") or _OPENING.match(sentence)
        if not asks:
            continue
        pieces = [p.strip(" ,;") for p in _JOIN.split(sentence)]
        parts += [_as_question(p) for p in pieces if len(p.split()) >= 2 or _OPENING.match(p)]
    return parts[:_MAX_PARTS] if len(parts) > 1 else [" ".join(question.split())]


def _as_question(part: str) -> str:
    part = part.rstrip(" ?.")
    return f"{part[:1].upper()}{part[1:]}?"


def standalone(part: str, question: str) -> str:
    """``part`` of ``question`` as a question of its own. A part that is only a question word
    asks it of the clause of the part before it: "How much of my deposit did Graham agree to
    give back, and why?" gives "For what reason did Graham agree to give back?" (a "why" is asked
    as "for what reason", see the module's note). Any other part, or one whose earlier part has
    no auxiliary verb to start a clause from, is returned as it is."""
    word = part.strip().rstrip(" ?.")
    parts = question_parts(question)
    if len(word.split()) != 1 or not _OPENING.fullmatch(word) or part not in parts[1:]:
        return part
    before = parts[parts.index(part) - 1].rstrip(" ?.")
    clause = _AUXILIARY.search(before)
    if clause is None:
        return part
    asked = _ASKED_AS.get(word.lower(), f"{word[:1].upper()}{word[1:].lower()}")
    return f"{asked} {before[clause.start() :]}?"

"""What a reflect call says to the model and how its reply is read (issue 37, docs/reflect.md), for
``learning/reflect.py``'s ``Reflector``: the instructions and JSON schemas, the notes grouped into
calls and numbered, the question about earlier beliefs that follows a reply, and the reply read into
beliefs with graded quotes (``read_reply``), dropping a statement whose specifics its notes do not
hold (``unheld``). No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memex.orchestrator.answer.citations import parse_citations
from memex.orchestrator.answer.claim_check import Shown, unsupported, verdicts
from memex.orchestrator.learning import beliefs as b
from memex.orchestrator.memory.items import Note

MAX_PER_CALL = 4  # conclusions one call may propose
MAX_AGAINST_TOKENS = 240  # a reply naming at most 3 disagreeing quotes of at most 200 characters

INSTRUCTIONS = """You read a person's own notes and write down what they show about the person
that will still hold later: habits, preferences, patterns, how things tend to go for them, what
matters to them. Write each conclusion as one short sentence. Back each one with quotes copied
word for word from the notes, naming the note by its number. When a note says otherwise, quote it
under contradicted_by. Only conclusions the notes show; fewer is better than a guess.
Reply with JSON only."""
# Asked after a call's reply, in the same conversation, about the earlier beliefs its notes may
# speak to. Not in the first prompt: shown them there, the 1.5B model proposed them again as its
# own conclusions (3 of 5 calls on the demo vault) and made fewer of its own.
EARLIER_QUESTION = """Earlier conclusions, numbered B1, B2, ...:
{listed}

Does any of the notes above say otherwise than one of them? Quote that note under contradicts,
naming the conclusion by its number and the note by its number. Leave contradicts empty when no
note does. Reply with JSON only."""

_QUOTES = {
    "type": "array",
    "maxItems": 3,
    "items": {
        "type": "object",
        "properties": {
            "note": {"type": "integer"},
            "quote": {"type": "string", "maxLength": 200},
        },
        "required": ["note", "quote"],
    },
}
_CONTRADICTS = {
    "type": "array",
    "maxItems": 3,
    "items": {
        "type": "object",
        "properties": {
            "belief": {"type": "integer"},
            "note": {"type": "integer"},
            "quote": {"type": "string", "maxLength": 200},
        },
        "required": ["belief", "note", "quote"],
    },
}
SCHEMA = {
    "type": "object",
    "properties": {
        "beliefs": {
            "type": "array",
            "maxItems": MAX_PER_CALL,
            "items": {
                "type": "object",
                "properties": {
                    "statement": {"type": "string", "maxLength": 200},
                    "confidence": {"type": "number"},
                    "evidence": _QUOTES,
                    "contradicted_by": _QUOTES,
                },
                "required": ["statement", "confidence", "evidence", "contradicted_by"],
            },
        }
    },
    "required": ["beliefs"],
}
CONTRADICTS_SCHEMA = {
    "type": "object",
    "properties": {"contradicts": _CONTRADICTS},
    "required": ["contradicts"],
}


def batches(notes: Sequence[Note], budget: int, note_chars: int) -> list[list[Note]]:
    """Notes in order, grouped so each group's text (each note cut at ``note_chars``) stays
    within ``budget`` characters; a note is never split."""
    groups: list[list[Note]] = []
    size = 0
    for note in notes:
        length = min(len(note.text), note_chars)
        if groups and size + length <= budget and len(groups[-1]) < 6:
            groups[-1].append(note)
            size += length
        else:
            groups.append([note])
            size = length
    return groups


def prompt(notes: Sequence[Note], note_chars: int) -> str:
    """The notes as the model reads them: numbered, dated and titled."""
    blocks = [
        f"[{n}] {note.date} {note.title}\n{note.text[:note_chars].strip()}"
        for n, note in enumerate(notes, start=1)
    ]
    return "Notes:\n\n" + "\n\n".join(blocks)


def earlier_question(shown: Sequence[b.Belief]) -> str:
    """The question about earlier beliefs that follows a call's reply, numbering them B1, ..."""
    listed = "\n".join(f"B{n}. {x.statement}" for n, x in enumerate(shown, start=1))
    return EARLIER_QUESTION.format(listed=listed)


def unheld(belief: b.Belief, notes: Sequence[Note]) -> list[str]:
    """The specifics of ``belief``'s statement (a figure, a date, a name, a command: the claim
    check's, ``claim_check.specifics``) that none of the notes it quotes holds: "Rent goes up to
    £55 in January" quoting a note that never says £55 is not that note's conclusion, however
    well its quote is graded."""
    quoted = {e.episode_id for e in belief.evidence}
    shown = [
        Shown.of(n.episode_id, n.text, header=n.title) for n in notes if n.episode_id in quoted
    ]
    return [s.text for s in unsupported(verdicts(belief.statement, shown))]


def read_reply(text: str, notes: Sequence[Note], model: str, today: str) -> list[b.Belief] | None:
    """The conclusions of one reply with their graded quotes (None: not readable as JSON).
    Conclusions without a supporting quote come back with no evidence, to be counted."""
    try:
        value = json.loads(text, strict=False)
        entries = value.get("beliefs") if isinstance(value, dict) else None
    except ValueError:  # a reply cut short, or prose around it: its first array, leniently
        entries = parse_citations(text) or None
    if not isinstance(entries, list):
        return None
    found = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        statement = " ".join(str(entry.get("statement") or "").split())
        if not statement:
            continue
        evidence = b.quotes(entry.get("evidence"), notes)
        against = b.quotes(entry.get("contradicted_by"), notes)
        raw = entry.get("confidence")
        confidence = float(raw) if isinstance(raw, int | float) else 0.5
        confidence = min(max(confidence / 100 if confidence > 1 else confidence, 0.0), 1.0)
        is_contested = b.contested(evidence, against)
        quoted = {e.episode_id for e in (*evidence, *against)}
        sensitive = any(n.sensitive for n in notes if n.episode_id in quoted)
        found.append(
            b.Belief(
                id=b.belief_id(statement),
                statement=statement,
                status="contested" if is_contested else "active",
                confidence=min(confidence, 0.5) if is_contested else confidence,
                evidence=evidence,
                contradicted_by=against,
                date=today,
                model=model,
                sensitive=sensitive,
            )
        )
    return found

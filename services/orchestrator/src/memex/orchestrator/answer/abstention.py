"""When an ask abstains, and what it says then (SPEC B1, B8, B10): the one place that decides.

An ask abstains when its memory is empty (``EMPTY``), when only sensitive notes matched and were
withheld (``WITHHELD``), or when the answer the model wrote does not rest on the sources it was
shown (``abstain_reason``: cut by the claim check, declined, uncited, ungrounded, off the topic,
uninformative, or of the wrong kind). An abstaining ask never guesses: it names the closest notes.
The tests ``abstain_reason`` applies are in ``judging.py`` and ``asked_kind.py``.
"""

from __future__ import annotations

from memex.orchestrator.answer.asked_kind import asked_kind, gives_kind
from memex.orchestrator.answer.grading import SUPPORTED_AT
from memex.orchestrator.answer.judging import cited_notes, informative, on_topic, writes_surname
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.answer.sources import Source

EMPTY = "empty"
WITHHELD = "withheld"
WITHHELD_ANSWER = "Only sensitive notes match this question, and they were withheld."


def abstain_reason(
    question: str, reading: Reading, sources: list[Source], abstain_below: float
) -> str:
    """Why the ask abstains, or "" when the answer rests on a source (SPEC B10)."""
    if reading.main_unsupported:
        # The claim check cut the sentence that answers: it stated a specific (a version, a
        # command, an amount) that no source it cites holds.
        return "unsupported"
    if reading.declined:
        return "declined"
    if not reading.citations:
        return "uncited"
    if reading.report.score < abstain_below:
        return "ungrounded"  # most of the numbers it gave name nothing it was shown
    if all(c.support == "inference" for c in reading.citations) and reading.support < SUPPORTED_AT:
        return "unsupported"
    if reading.unfounded_money or reading.borrowed_figure:
        # Its words may all be there, and another of its sentences well supported, but the
        # amount it gives is in no source shown ("The brake pads cost $4 [1]" from "brake pads
        # at 4 mm"), or is another note's (the tax refund's $1,000 as a trip's refund).
        return "unsupported"
    if not on_topic(question, reading, sources):
        return "off_topic"  # its sources say nothing of what was asked
    if not writes_surname(question, reading, sources):
        return "unsupported"  # a neighbour's first name given as the person's surname
    if not informative(question, reading):
        return "uninformative"  # it restates the question and answers nothing
    kind = asked_kind(question)
    if kind and not gives_kind(kind, reading.claims, cited_notes(reading, sources)):
        return "wrong_kind"  # asked for a plugin, it gives a key binding
    return ""


def abstaining_answer(sources: list[Source]) -> str:
    """What an abstaining ask answers: that it won't guess, and the closest notes."""
    nearest = list(dict.fromkeys(s.ref for s in sources))[:3]
    return (
        "I could not ground an answer to this in your notes, so I won't guess. "
        f"The closest notes were {', '.join(nearest)}."
    )

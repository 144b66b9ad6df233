"""One ask on its way through the stages (``asker.py``): the checked question, and the object
that carries it from the briefing to the answer."""

from __future__ import annotations

from dataclasses import dataclass

from memex.orchestrator.answer.sources import Source
from memex.orchestrator.ask.events import AskResult
from memex.orchestrator.ask.stages import MAX_QUESTION_CHARS
from memex.orchestrator.memory.items import ShownItem
from memex.orchestrator.turn.persona import Persona
from memex.orchestrator.turn.pipeline import checked
from memex.shared.errors import InvalidArgument


def checked_question(question: str, limit: int) -> str:
    """``question`` as an ask takes it (trimmed); InvalidArgument for an empty or too long one,
    or a ``limit`` out of range."""
    question = checked(
        question, name="question", hint="ask something", max_chars=MAX_QUESTION_CHARS
    )
    if not 0 <= limit <= 50:
        raise InvalidArgument(f"limit must be between 1 and 50 (0 for the default), not {limit}")
    return question


@dataclass
class AskTurn:
    """One ask after check, plan, retrieve and brief: the one object its later stages read and
    add to (``stages``; ``sources`` names what the answer rests on once it is drafted)."""

    question: str
    query: str  # the question as searched and answered (reframed, when the persona reframes)
    persona: Persona
    fused: list[ShownItem]  # everything retrieved, for telemetry
    withheld: list[ShownItem]  # sensitive items the model may not see
    briefing: list[Source]  # the whole briefing
    first: list[Source]  # the best of it, what a first pass reads (all of it: no first pass)
    sources: list[Source]
    result: AskResult  # abstains (empty memory) until an answer settles it

    @property
    def stages(self) -> list[str]:
        """The stages run so far, in order (the result's own list)."""
        return self.result.stages

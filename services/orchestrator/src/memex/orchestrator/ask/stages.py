"""Ask's own stages around the shared pipeline (``turn/pipeline.py``): the persona's extra model
calls (reframe, plan, counter-evidence; each one audited call that sees the question, never the
notes) and the rules for when an ask abstains (SPEC B1, B8, B10).
"""

from __future__ import annotations

import json

from memex.orchestrator.answer.asked_kind import asked_kind, gives_kind
from memex.orchestrator.answer.grading import SUPPORTED_AT
from memex.orchestrator.answer.judging import cited_notes, informative, on_topic, writes_surname
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.record.audit import AuditedReasoner
from memex.orchestrator.turn.persona import Persona
from memex.orchestrator.turn.planner import PLAN_INSTRUCTIONS, PLAN_SCHEMA, Plan, wants_plan
from memex.orchestrator.turn.planner import parse_plan as read_plan

MAX_QUESTION_CHARS = 4000


class PersonaCalls:
    """The model calls a persona may add to an ask, before the sources are chosen."""

    def __init__(self, reasoner: AuditedReasoner, settings: OrchestratorSettings) -> None:
        self._reasoner = reasoner
        self._settings = settings

    def plans(self, persona: Persona, question: str) -> bool:
        """Whether this ask runs the plan hop: the setting, the persona, and the question."""
        mode = self._settings.plan_hop
        if mode == "never" or "plan" not in persona.stages:
            return False
        return mode == "always" or wants_plan(question)

    async def _call(
        self,
        purpose: str,
        persona: Persona,
        system: str,
        user: str,
        *,
        schema: str = "",
        max_tokens: int = 0,
    ) -> str:
        # These calls see the question only, never a note: nothing sensitive to name. Greedy,
        # like the answer: a plan sampled warm searched the notes in one run and not the next.
        options = GenerateOptions(
            max_tokens=max_tokens or self._settings.ask_max_tokens,
            temperature=0.0,
            json_schema=schema,
        )
        return await self._reasoner.complete(
            purpose=purpose,
            persona=persona.name,
            options=options,
            sensitive_texts=[],
            messages=[ChatMessage("system", system), ChatMessage("user", user)],
        )

    async def reframe(self, question: str, persona: Persona) -> str:
        """The question rewritten to be specific and searchable ("" if the model gave none)."""
        text = await self._call(
            "ask_reframe",
            persona,
            "Rewrite the question so it is specific and searchable. Reply with the question only.",
            question,
            max_tokens=80,
        )
        return " ".join(text.split())[:MAX_QUESTION_CHARS]

    async def plan(self, question: str, persona: Persona) -> Plan:
        """The data-blind plan hop (SPEC B1): lookup steps, invalid ones dropped and listed."""
        text = await self._call(
            "ask_plan",
            persona,
            PLAN_INSTRUCTIONS,
            f"Question: {question}",
            schema=json.dumps(PLAN_SCHEMA),
            max_tokens=self._settings.plan_max_tokens,
        )
        return read_plan(text, question)

    async def counter_query(self, question: str, persona: Persona) -> str:
        """A search query for evidence against the likely answer ("" if none)."""
        text = await self._call(
            "ask_counter_evidence",
            persona,
            "Write one short search query that would find evidence AGAINST the likely answer to "
            "this question. Reply with the query only.",
            question,
            max_tokens=40,
        )
        return " ".join(text.split())[:500]


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


def abstention(sources: list[Source]) -> str:
    """What an abstaining ask answers: that it won't guess, and the closest notes."""
    nearest = list(dict.fromkeys(s.ref for s in sources))[:3]
    return (
        "I could not ground an answer to this in your notes, so I won't guess. "
        f"The closest notes were {', '.join(nearest)}."
    )

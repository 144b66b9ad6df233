"""Ask's own stages around the shared pipeline (``turn/pipeline.py``): the persona's extra model
calls (reframe, plan, counter-evidence; each one audited call that sees the question, never the
notes). When an ask abstains is ``answer/abstention.py``'s to say.
"""

from __future__ import annotations

import json

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

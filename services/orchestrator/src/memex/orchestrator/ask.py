"""Ask (SPEC B1, B8): the agentic two-hop, one structured answer, telemetry but no conversation.

plan (model, sees no data) → local retrieval of every valid step → RRF → sensitivity split →
top N → synthesize (model, sees only the kept items) → grounding check. A persona may add
reframe, seek-counter-evidence and revise stages, each one more audited model call.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from memex.orchestrator.briefing import ANSWER_FORMAT, EMPTY_MEMORY_ANSWER, cite_id, render_items
from memex.orchestrator.citations import police
from memex.orchestrator.core import Context
from memex.orchestrator.fusion import rrf
from memex.orchestrator.items import Citation, GroundingReport, ShownItem
from memex.orchestrator.metrics import (
    ABSTENTIONS,
    ASKS,
    DROPPED_CITATIONS,
    DROPPED_STEPS,
    WITHHELD,
    timed,
)
from memex.orchestrator.persona import Persona
from memex.orchestrator.planner import PLAN_INSTRUCTIONS, PLAN_SCHEMA, Plan, parse_plan
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.shared.errors import InvalidArgument

MAX_QUESTION_CHARS = 4000


def answer_schema(cite_ids: list[str]) -> dict[str, Any]:
    """The synthesize hop's output schema. Citations may only name the ids shown, so even a small
    model's constrained decoding cannot produce an id that does not exist (policing still runs).
    Long maxLength bounds are left out: llama.cpp grammars unroll them into rules too deep to use;
    max_tokens bounds the answer instead."""
    episode: dict[str, Any] = (
        {"type": "string", "enum": cite_ids} if cite_ids else {"type": "string"}
    )
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "citations": {
                "type": "array",
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {
                        "episode": episode,
                        "quote": {"type": "string", "maxLength": 200},
                        "support": {
                            "type": "string",
                            "enum": ["verbatim", "paraphrase", "inference"],
                        },
                    },
                    "required": ["episode", "quote", "support"],
                },
            },
            "opinion": {"type": "string"},
        },
        "required": ["answer", "citations"],
    }


@dataclass
class AskResult:
    """The structured result of an ask (SPEC B8)."""

    answer: str
    citations: list[Citation]
    persona: str
    grounding: GroundingReport
    abstained: bool
    stages: list[str]
    reframed_question: str = ""
    opinion: str = ""
    withheld: int = 0
    model: str = ""
    latency_ms: float = 0.0
    turn_id: str = ""
    dropped_steps: list[str] = field(default_factory=list)


def _draft(text: str) -> tuple[str, list[dict[str, object]], str]:
    """(answer, raw citations, opinion) from the synthesize hop's JSON; prose if it is not JSON."""
    try:
        value = json.loads(text, strict=False)
    except ValueError:
        return text.strip(), [], ""
    if not isinstance(value, dict):
        return text.strip(), [], ""
    citations = value.get("citations")
    raw = [c for c in citations if isinstance(c, dict)] if isinstance(citations, list) else []
    return str(value.get("answer") or "").strip(), raw, str(value.get("opinion") or "").strip()


class Asker:
    """Runs asks against one context."""

    def __init__(self, context: Context) -> None:
        self._c = context

    async def ask(
        self, tenant: str, question: str, persona_name: str = "", limit: int = 0
    ) -> AskResult:
        """Answers ``question`` from memory with checked citations."""
        try:
            result = await self._ask(tenant, question, persona_name, limit)
        except BaseException:
            ASKS.labels("error").inc()
            raise
        ASKS.labels("abstained" if result.abstained else "answered").inc()
        if result.abstained:
            ABSTENTIONS.labels("ungrounded" if "synthesize" in result.stages else "empty").inc()
        DROPPED_STEPS.inc(len(result.dropped_steps))
        DROPPED_CITATIONS.labels("ask").inc(len(result.grounding.dropped))
        WITHHELD.labels("ask").inc(result.withheld)
        return result

    async def _ask(self, tenant: str, question: str, persona_name: str, limit: int) -> AskResult:
        started = time.perf_counter()
        question = question.strip()
        if not question:
            raise InvalidArgument("question is empty: ask something")
        if len(question) > MAX_QUESTION_CHARS:
            raise InvalidArgument(
                f"question has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}"
            )
        if not 0 <= limit <= 50:
            raise InvalidArgument(
                f"limit must be between 1 and 50 (0 for the default), not {limit}"
            )
        c = self._c
        persona = c.personas.get(persona_name, "ask")
        limit = limit or c.settings.ask_limit
        stages: list[str] = []
        query = question
        if "reframe" in persona.stages:
            with timed("reframe"):
                query = await self._reframe(question, persona) or question
            stages.append("reframe")

        with timed("plan"):
            plan = await self._plan(query, persona)
        stages.append("plan")
        with timed("retrieve"):
            fused = rrf(await c.run_steps(tenant, plan.steps, persona), c.settings.rrf_k)
        stages.append("retrieve")
        shown, withheld = c.split_sensitive(fused)
        shown = shown[:limit]
        if "seek_counter_evidence" in persona.stages and shown:
            with timed("counter_evidence"):
                counter_query = await self._counter_query(query, persona)
                counter = (
                    await c.memory.search(tenant, c.search_spec(persona, counter_query))
                    if counter_query
                    else []
                )
            stages.append("seek_counter_evidence")
            if counter_query:
                fused = rrf([fused, counter], c.settings.rrf_k)
                shown, withheld = c.split_sensitive(fused)
                shown = shown[:limit]

        result = AskResult(
            answer=EMPTY_MEMORY_ANSWER,
            citations=[],
            persona=persona.name,
            grounding=GroundingReport(0, 0),
            abstained=True,
            stages=stages,
            reframed_question=query if query != question else "",
            withheld=len(withheld),
            model=c.info.model,
            dropped_steps=list(plan.dropped),
        )
        if shown:
            sensitive = [i.text for i in withheld]
            with timed("synthesize"):
                draft = await self._synthesize(query, shown, persona, sensitive)
            answer, raw, opinion = _draft(draft)
            stages.append("synthesize")
            with timed("ground_check"):
                citations, report = police(raw, shown)
            stages.append("ground_check")
            if "revise" in persona.stages:
                with timed("revise"):
                    answer, raw, opinion = _draft(
                        await self._revise(query, shown, persona, answer, report, sensitive)
                    )
                    citations, report = police(raw, shown)
                stages.append("revise")
            result.grounding, result.opinion = report, opinion
            result.abstained = not citations or report.score < c.settings.abstain_below
            result.citations = [] if result.abstained else citations
            result.answer = self._abstention(shown) if result.abstained else answer
        if withheld:
            result.answer = f"{result.answer}\n\n{c.withheld_note(len(withheld))}"
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.turn_id = await c.record(
            tenant=tenant,
            kind="ask",
            query=question,
            latency_ms=result.latency_ms,
            persona=persona.name,
            items=fused,
            citations=result.citations,
            grounding=result.grounding.score,
            abstained=result.abstained,
            dropped_steps=result.dropped_steps,
        )
        return result

    @staticmethod
    def _abstention(shown: list[ShownItem]) -> str:
        nearest = list(dict.fromkeys(item.ref for item in shown))[:3]
        return (
            "I could not ground an answer to this in your notes, so I won't guess. "
            f"The closest notes were {', '.join(nearest)}."
        )

    async def _call(
        self,
        purpose: str,
        persona: Persona,
        system: str,
        user: str,
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 0,
        sensitive: list[str] | None = None,
    ) -> str:
        options = GenerateOptions(
            max_tokens=max_tokens or self._c.settings.answer_max_tokens,
            temperature=0.2,
            json_schema=json.dumps(schema) if schema else "",
        )
        return await self._c.reasoner.complete(
            purpose=purpose,
            persona=persona.name,
            options=options,
            sensitive_texts=sensitive or [],
            messages=[ChatMessage("system", system), ChatMessage("user", user)],
        )

    async def _reframe(self, question: str, persona: Persona) -> str:
        text = await self._call(
            "ask_reframe",
            persona,
            "Rewrite the question so it is specific and searchable. Reply with the question only.",
            question,
            max_tokens=80,
        )
        return " ".join(text.split())[:MAX_QUESTION_CHARS]

    async def _plan(self, question: str, persona: Persona) -> Plan:
        text = await self._call(
            "ask_plan",
            persona,
            PLAN_INSTRUCTIONS,
            f"Question: {question}",
            schema=PLAN_SCHEMA,
            max_tokens=self._c.settings.plan_max_tokens,
        )
        return parse_plan(text, question)

    async def _counter_query(self, question: str, persona: Persona) -> str:
        text = await self._call(
            "ask_counter_evidence",
            persona,
            "Write one short search query that would find evidence AGAINST the likely answer to "
            "this question. Reply with the query only.",
            question,
            max_tokens=40,
        )
        return " ".join(text.split())[:500]

    async def _synthesize(
        self, question: str, shown: list[ShownItem], persona: Persona, sensitive: list[str]
    ) -> str:
        system = f"{persona.system_prompt.strip()}\n\n{ANSWER_FORMAT}"
        user = f"{render_items(shown)}\n\nQuestion: {question}"
        return await self._call(
            "ask_synthesize",
            persona,
            system,
            user,
            schema=answer_schema([cite_id(i) for i in shown]),
            sensitive=sensitive,
        )

    async def _revise(
        self,
        question: str,
        shown: list[ShownItem],
        persona: Persona,
        draft: str,
        report: GroundingReport,
        sensitive: list[str],
    ) -> str:
        system = f"{persona.system_prompt.strip()}\n\n{ANSWER_FORMAT}"
        user = (
            f"{render_items(shown)}\n\nQuestion: {question}\n\nYour draft answer:\n{draft}\n\n"
            f"{report.grounded} of {report.cited} citations named an excerpt shown above; these "
            f"did not: {', '.join(report.dropped) or 'none'}. Revise the answer so every claim "
            "rests on a cited excerpt, and drop what cannot."
        )
        return await self._call(
            "ask_revise",
            persona,
            system,
            user,
            schema=answer_schema([cite_id(i) for i in shown]),
            sensitive=sensitive,
        )

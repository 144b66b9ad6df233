"""Ask (SPEC B1, B8): one structured, cited answer; telemetry but no conversation.

By default an ask is one model call: search the question → numbered sources within a token
budget → the model answers in prose, citing sources by number, streamed → memex grounds and
grades the numbers itself (``answers.py``). The data-blind plan hop of SPEC B1 runs only when a
question earns it (records, the inbox, a person's timeline, two questions at once), or always
with ``plan_hop=always``; steps that find nothing fall back to searching the question. A persona
may add reframe, seek-counter-evidence and revise stages, each one more audited model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from memex.orchestrator import sources as briefing_sources
from memex.orchestrator.answers import SUPPORTED_AT, Reading, ReplyStream, on_topic
from memex.orchestrator.briefing import EMPTY_MEMORY_ANSWER, answer_messages, revise_messages
from memex.orchestrator.core import Context
from memex.orchestrator.fusion import rrf
from memex.orchestrator.items import Citation, GroundingReport
from memex.orchestrator.metrics import (
    ABSTENTIONS,
    ASKS,
    DROPPED_CITATIONS,
    DROPPED_STEPS,
    STAGE_SECONDS,
    WITHHELD,
    timed,
)
from memex.orchestrator.persona import Persona
from memex.orchestrator.planner import PLAN_INSTRUCTIONS, PLAN_SCHEMA, Plan, Step, wants_plan
from memex.orchestrator.planner import parse_plan as read_plan
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.sources import Source, estimate_tokens
from memex.shared.errors import InvalidArgument

MAX_QUESTION_CHARS = 4000
ANSWER_TEMPERATURE = 0.1


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
    # "", "empty", "withheld", "declined", "uncited", "ungrounded", "unsupported" or "off_topic"
    abstain_reason: str = ""


@dataclass(frozen=True)
class Started:
    """The sources are chosen and the model is about to write."""

    model: str
    persona: str
    sources: list[str]


@dataclass(frozen=True)
class Draft:
    """Answer text as the model writes it, source numbers already read as refs (unchecked)."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The checked answer; always the last event."""

    result: AskResult


AskEvent = Started | Draft | Finished


class Asker:
    """Runs asks against one context."""

    def __init__(self, context: Context) -> None:
        self._c = context

    async def ask(
        self, tenant: str, question: str, persona_name: str = "", limit: int = 0
    ) -> AskResult:
        """Answers ``question`` from memory with checked citations."""
        result: AskResult | None = None
        async with contextlib.aclosing(self.stream(tenant, question, persona_name, limit)) as run:
            async for event in run:
                if isinstance(event, Finished):
                    result = event.result
        if result is None:
            raise AssertionError("an ask stream always ends with its result")
        return result

    async def stream(
        self, tenant: str, question: str, persona_name: str = "", limit: int = 0
    ) -> AsyncGenerator[AskEvent, None]:
        """The ask as events: Started, Draft..., Finished. Bad input raises before any event."""
        started = time.perf_counter()
        try:
            async for event in self._stream(tenant, question, persona_name, limit, started):
                if isinstance(event, Draft) and not event.text.strip():
                    continue
                if isinstance(event, Finished):
                    _count(event.result)
                yield event
        except (GeneratorExit, asyncio.CancelledError):
            ASKS.labels("cancelled").inc()
            raise
        except BaseException:
            ASKS.labels("error").inc()
            raise

    async def _stream(
        self, tenant: str, question: str, persona_name: str, limit: int, started: float
    ) -> AsyncGenerator[AskEvent, None]:
        question = _checked(question, limit)
        c = self._c
        persona = c.personas.get(persona_name, "ask")
        limit = limit or c.settings.ask_limit
        stages: list[str] = []
        query = question
        if "reframe" in persona.stages:
            with timed("reframe"):
                query = await self._reframe(question, persona) or question
            stages.append("reframe")

        plan = Plan((Step("search_vault", query=query),), (), fell_back=False)
        if self._plans(persona, query):
            with timed("plan"):
                plan = await self._plan(query, persona)
            stages.append("plan")
        with timed("retrieve"):
            fused = rrf(await c.run_steps(tenant, plan.steps, persona), c.settings.rrf_k)
            if not fused and plan.steps != (Step("search_vault", query=query),):
                # The plan's lookups found nothing (a records query, a filter that matches
                # nothing): the notes may still answer the question itself.
                fused = await c.memory.search(tenant, c.search_spec(persona, query))
                stages.append("fallback_search")
        stages.append("retrieve")
        shown, withheld = c.split_sensitive(fused)
        if "seek_counter_evidence" in persona.stages and shown:
            with timed("counter_evidence"):
                counter_query = await self._counter_query(query, persona)
                if counter_query:
                    counter = await c.memory.search(tenant, c.search_spec(persona, counter_query))
                    fused = rrf([fused, counter], c.settings.rrf_k)
                    shown, withheld = c.split_sensitive(fused)
            stages.append("seek_counter_evidence")
        sources = briefing_sources.select(
            shown,
            query,
            token_budget=self._budget(persona, query),
            excerpt_chars=c.settings.excerpt_chars,
            limit=limit,
        )
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
            abstain_reason="empty",
        )
        yield Started(c.info.model, persona.name, [s.ref for s in sources])
        if sources:
            sensitive = [i.text for i in withheld]
            with timed("synthesize"):
                async for piece in self._answer(
                    answer_messages(persona, sources, query), sources, persona, sensitive, started
                ):
                    if isinstance(piece, Draft):
                        yield piece
                    else:
                        reading = piece
            stages += ["synthesize", "ground_check"]
            if reading.attributed:
                stages.append("attribute")
            if "revise" in persona.stages:
                with timed("revise"):
                    reading = await self._revise(query, sources, persona, reading, sensitive)
                stages.append("revise")
            self._settle(result, query, reading, sources)
        elif withheld:
            result.answer = "Only sensitive notes match this question, and they were withheld."
            result.abstain_reason = "withheld"
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
            answer=result.answer,
        )
        yield Finished(result)

    def _plans(self, persona: Persona, question: str) -> bool:
        mode = self._c.settings.plan_hop
        if mode == "never" or "plan" not in persona.stages:
            return False
        return mode == "always" or wants_plan(question)

    def _budget(self, persona: Persona, question: str) -> int:
        """Tokens the sources may take: the setting, within what the context leaves."""
        c = self._c
        fixed = estimate_tokens(persona.system_prompt + question) + 250  # rules, template
        room = c.info.context_length - c.settings.ask_max_tokens - fixed
        return max(100, min(c.settings.briefing_tokens, room))

    def _settle(
        self, result: AskResult, question: str, reading: Reading, sources: list[Source]
    ) -> None:
        """Abstain unless the answer rests on a source (SPEC B10); name the closest notes."""
        result.grounding = reading.report
        reason = ""
        if reading.declined:
            reason = "declined"
        elif not reading.citations:
            reason = "uncited"
        elif reading.report.score < self._c.settings.abstain_below:
            reason = "ungrounded"  # most of the numbers it gave name nothing it was shown
        elif all(c.support == "inference" for c in reading.citations) and (
            reading.support < SUPPORTED_AT
        ):
            reason = "unsupported"
        elif not on_topic(question, reading, sources):
            reason = "off_topic"  # its sources say nothing of what was asked
        result.abstained = bool(reason)
        result.abstain_reason = reason
        if result.abstained:
            result.citations = []
            result.answer = _abstention(sources)
        else:
            result.citations = reading.citations
            result.answer = reading.answer

    async def _answer(
        self,
        messages: list[ChatMessage],
        sources: list[Source],
        persona: Persona,
        sensitive: list[str],
        started: float | None,
    ) -> AsyncGenerator[Draft | Reading, None]:
        """Streams the model's answer as Drafts, then yields what checking makes of it. The
        first words are timed from ``started`` (None: a revision, not timed)."""
        reply = ReplyStream(sources)
        generated = self._c.reasoner.stream(
            purpose="ask_synthesize",
            persona=persona.name,
            messages=messages,
            options=GenerateOptions(
                max_tokens=self._c.settings.ask_max_tokens, temperature=ANSWER_TEMPERATURE
            ),
            sensitive_texts=sensitive,
        )
        async with contextlib.aclosing(generated):
            async for piece in generated:
                if text := reply.feed(piece):
                    if started is not None and text.strip():
                        STAGE_SECONDS.labels("ask_first_words").observe(
                            time.perf_counter() - started
                        )
                        started = None
                    yield Draft(text)
                if reply.looping:
                    break
        yield Draft(reply.finish())
        with timed("ground_check"):
            reading = reply.read()
        yield reading

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
        options = GenerateOptions(
            max_tokens=max_tokens or self._c.settings.ask_max_tokens,
            temperature=0.2,
            json_schema=schema,
        )
        return await self._c.reasoner.complete(
            purpose=purpose,
            persona=persona.name,
            options=options,
            sensitive_texts=[],
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
            schema=json.dumps(PLAN_SCHEMA),
            max_tokens=self._c.settings.plan_max_tokens,
        )
        return read_plan(text, question)

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

    async def _revise(
        self,
        question: str,
        sources: list[Source],
        persona: Persona,
        draft: Reading,
        sensitive: list[str],
    ) -> Reading:
        weak = [c.ref for c in draft.citations if c.support == "inference"]
        problems = (
            f"{draft.report.grounded} of {draft.report.cited} source numbers named a source "
            f"shown; these did not: {', '.join(draft.report.dropped) or 'none'}; weakly "
            f"supported: {', '.join(weak) or 'none'}."
        )
        reading = draft
        async for piece in self._answer(
            revise_messages(persona, sources, question, draft.answer, problems),
            sources,
            persona,
            sensitive,
            None,
        ):
            if isinstance(piece, Reading):
                reading = piece
        return reading


def _count(result: AskResult) -> None:
    ASKS.labels("abstained" if result.abstained else "answered").inc()
    if result.abstained:
        ABSTENTIONS.labels(result.abstain_reason or "ungrounded").inc()
    DROPPED_STEPS.inc(len(result.dropped_steps))
    DROPPED_CITATIONS.labels("ask").inc(len(result.grounding.dropped))
    WITHHELD.labels("ask").inc(result.withheld)


def _checked(question: str, limit: int) -> str:
    question = question.strip()
    if not question:
        raise InvalidArgument("question is empty: ask something")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidArgument(
            f"question has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}"
        )
    if not 0 <= limit <= 50:
        raise InvalidArgument(f"limit must be between 1 and 50 (0 for the default), not {limit}")
    return question


def _abstention(sources: list[Source]) -> str:
    nearest = list(dict.fromkeys(s.ref for s in sources))[:3]
    return (
        "I could not ground an answer to this in your notes, so I won't guess. "
        f"The closest notes were {', '.join(nearest)}."
    )

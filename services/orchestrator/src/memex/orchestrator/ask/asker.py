"""Ask (SPEC B1, B8): one structured, cited answer; telemetry but no conversation.

By default an ask is one model call: search the question → numbered sources within a token
budget → the model answers in prose, citing sources by number, streamed → memex grounds and
grades the numbers itself (``answer/``). On a CPU too slow to read the whole briefing quickly,
the call first reads only the best sources (what it prefills in ``ask_first_pass_seconds``), and
its answer streams. One that does not rest on them is set aside and asked again over the whole
briefing, whose start is the first prompt, so the model reads only what was added. One that does
is the answer, unless ``ask_confirm_first_pass`` has the whole briefing confirm it, unstreamed:
the reader keeps the draft when that answer cites the same notes with the same figures, and gets
that answer instead otherwise.

A compound question ("how much ..., and why?") whose answer leaves a part out gets one short
call per missing part over the same sources (``answer_parts``); what the notes do not answer is
named, never filled in. A sentence that names a command in part is followed by the cited note's
whole line (``answer/to_type.py``).

The data-blind plan hop of SPEC B1 runs only when a question earns it (records, the inbox, a
person's timeline), or always with ``plan_hop=always``; steps that find nothing fall back to
searching the question. A persona may add reframe, seek-counter-evidence and revise stages, each
one more audited model call.

The stages ask shares with chat (check, retrieve, brief, generate and filter, police, record) are
``turn/pipeline.py``'s; ask's own (the persona's extra calls, when to abstain) are
``ask/stages.py``'s; the calls that write, weigh and settle its answer are ``ask/drafting.py``'s,
and what it yields (the result, the streamed events) is ``ask/events.py``'s. ``Asker`` runs them in
order; it serves Ask, AskStream and the queued-turn worker alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator

from memex.orchestrator.answer import abstention
from memex.orchestrator.answer.abstention import abstain_reason
from memex.orchestrator.answer.briefing import EMPTY_MEMORY_ANSWER, answer_messages
from memex.orchestrator.answer.judging import unaddressed_parts
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.ask.drafting import Answerer
from memex.orchestrator.ask.events import AskEvent, AskResult, Draft, Redraft, Started
from memex.orchestrator.ask.stages import PersonaCalls
from memex.orchestrator.ask.turn import AskTurn, checked_question
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.memory import as_of as as_of_day
from memex.orchestrator.memory.items import GroundingReport, note_path
from memex.orchestrator.metrics import (
    ABSTENTIONS,
    ASKS,
    DROPPED_CITATIONS,
    DROPPED_STEPS,
    WITHHELD,
    timed,
)
from memex.orchestrator.record.audit import AuditedReasoner, tenant_var
from memex.orchestrator.turn.persona import Personas
from memex.orchestrator.turn.pipeline import Pipeline, dated_search
from memex.orchestrator.turn.planner import Plan, Step


class Asker:
    """Runs asks: the shared pipeline plus the persona's own model calls, each audited."""

    def __init__(
        self,
        settings: OrchestratorSettings,
        personas: Personas,
        pipeline: Pipeline,
        reasoner: AuditedReasoner,
    ) -> None:
        self._settings = settings
        self._personas = personas
        self._p = pipeline
        self._calls = PersonaCalls(reasoner, settings)  # reframe, plan, counter-evidence
        self._answerer = Answerer(pipeline.generator, settings)  # the answer's own calls

    async def ask(
        self,
        tenant: str,
        question: str,
        persona_name: str = "",
        limit: int = 0,
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> AskResult:
        """Answers ``question`` from memory with checked citations. Sensitive notes reach the
        model only with ``include_sensitive`` (and a reasoner allowed them, ``Sensitivity``).
        ``as_of`` (YYYY-MM-DD): from the memory as it stood at the end of that day."""
        result: AskResult | None = None
        events = self.stream(
            tenant,
            question,
            persona_name,
            limit,
            include_sensitive=include_sensitive,
            as_of=as_of,
        )
        async with contextlib.aclosing(events) as run:
            async for event in run:
                if isinstance(event, AskResult):
                    result = event
        if result is None:
            raise AssertionError("an ask stream always ends with its result")
        return result

    async def stream(
        self,
        tenant: str,
        question: str,
        persona_name: str = "",
        limit: int = 0,
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> AsyncGenerator[AskEvent, None]:
        """The ask as events: Started, Draft..., [Redraft, Draft...], AskResult. Bad input raises
        before any event.
        ``include_sensitive``, ``as_of``: as ``ask``."""
        started = time.perf_counter()
        # A piece that is only whitespace (the space a model writes before a digit) is carried
        # into the next draft rather than sent alone or dropped: "due 1 January", not "due1".
        spacing = ""
        try:
            async for event in self._stream(
                tenant, question, persona_name, limit, started, include_sensitive, as_of
            ):
                if isinstance(event, Draft):
                    if not event.text.strip():
                        spacing += event.text
                        continue
                    event, spacing = Draft(spacing + event.text), ""
                elif isinstance(event, Redraft):
                    spacing = ""
                if isinstance(event, AskResult):
                    _count(event)
                yield event
        except (GeneratorExit, asyncio.CancelledError):
            ASKS.labels("cancelled").inc()
            raise
        except BaseException:
            ASKS.labels("error").inc()
            raise

    async def _stream(
        self,
        tenant: str,
        question: str,
        persona_name: str,
        limit: int,
        started: float,
        include_sensitive: bool,
        as_of: str,
    ) -> AsyncGenerator[AskEvent, None]:
        turn = await self._brief(tenant, question, persona_name, limit, include_sensitive, as_of)
        yield Started(
            self._p.generator.model,
            turn.persona.name,
            [s.ref for s in turn.sources],
            [note_path(s.item) for s in turn.sources],
        )
        result = turn.result
        if turn.sources:
            reading: Reading | None = None
            async for piece in self._draft(turn, started):
                if isinstance(piece, Reading):
                    reading = piece
                else:
                    yield piece
            assert reading is not None  # _draft always ends with its reading
            async for piece in self._complete(turn, reading):
                if isinstance(piece, Reading):
                    reading = piece
                else:
                    yield piece
            self._answerer.settle(result, turn.query, reading, turn.sources)
        elif turn.withheld:
            result.answer = abstention.WITHHELD_ANSWER
            result.abstain_reason = abstention.WITHHELD
        if turn.withheld:
            note = self._p.sensitivity.withheld_note(len(turn.withheld))
            result.answer = f"{result.answer}\n\n{note}"
        # record
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.turn_id = await self._p.recorder.record(
            tenant=tenant,
            kind="ask",
            query=turn.question,
            latency_ms=result.latency_ms,
            persona=turn.persona.name,
            items=turn.fused,
            citations=result.citations,
            grounding=result.grounding.score,
            abstained=result.abstained,
            dropped_steps=result.dropped_steps,
            answer=result.answer,
            report=result.grounding,
            sources=turn.sources,
        )
        yield result

    async def _brief(
        self,
        tenant: str,
        question: str,
        persona_name: str,
        limit: int,
        include_sensitive: bool,
        as_of: str,
    ) -> AskTurn:
        """Check, plan, retrieve and brief: the ask as the stages that write its answer read it."""
        # check (before any event, so bad input is a plain error)
        question = checked_question(question, limit)
        day = as_of_day.parse(as_of)
        tenant_var.set(tenant)  # every model call of this ask is logged as the tenant's
        as_of_day.as_of_var.set(day)  # every stage reads memory as of that day (docs/as-of.md)
        p = self._p
        persona = self._personas.get(persona_name, "ask")
        limit = limit or self._settings.ask_limit
        stages: list[str] = []
        query = question
        if "reframe" in persona.stages:
            with timed("reframe"):
                query = await self._calls.reframe(question, persona) or question
            stages.append("reframe")

        plan = Plan((Step("search_vault", query=query),), (), fell_back=False)
        if self._calls.plans(persona, query):
            with timed("plan"):
                plan = await self._calls.plan(query, persona)
            stages.append("plan")
        dated = dated_search(question, query)
        if dated:
            stages.append("dated_search")
        # retrieve
        with timed("retrieve"):
            ranked = await p.retriever.run_steps(tenant, plan.steps + dated, persona)
            fused = p.retriever.fuse(ranked)
            if not fused and plan.steps != (Step("search_vault", query=query),):
                # The plan's lookups found nothing (a records query, a filter that matches
                # nothing): the notes may still answer the question itself.
                fused = await p.retriever.search(tenant, persona, query)
                stages.append("fallback_search")
        stages.append("retrieve")
        # Sensitive items are retrieved (so they can be counted) but withheld from the model
        # unless the request asked for them and the reasoner may see them.
        shown, withheld = p.sensitivity.split(fused, include_sensitive=include_sensitive)
        if "seek_counter_evidence" in persona.stages and shown:
            with timed("counter_evidence"):
                counter_query = await self._calls.counter_query(query, persona)
                if counter_query:
                    counter = await p.retriever.search(tenant, persona, counter_query)
                    fused = p.retriever.fuse([fused, counter])
                    shown, withheld = p.sensitivity.split(
                        fused, include_sensitive=include_sensitive
                    )
            stages.append("seek_counter_evidence")
        # brief: the whole briefing, and the best of it that a first pass reads
        briefing = p.briefer.sources(
            shown, query, budget=p.briefer.ask_budget(persona, query), limit=limit
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
            model=p.generator.model,
            dropped_steps=list(plan.dropped),
            abstain_reason=abstention.EMPTY,
            as_of=as_of_day.wire(),
        )
        return AskTurn(
            question=question,
            query=query,
            persona=persona,
            fused=fused,
            withheld=withheld,
            briefing=briefing,
            first=p.briefer.first_pass(briefing, query),
            sources=briefing,
            result=result,
        )

    async def _draft(
        self, turn: AskTurn, started: float
    ) -> AsyncGenerator[Draft | Redraft | Reading, None]:
        """Generate and filter, then police (``Answerer.answer``): the first pass over the best
        sources when there is one, the whole briefing when it does not stand or there is none.
        Yields what the reader sees, then the reading; ``turn.sources`` is left naming the
        sources that reading rests on."""
        stages, query, persona, withheld = turn.stages, turn.query, turn.persona, turn.withheld
        first, briefing = turn.first, turn.briefing
        drafted = False  # whether the reader saw any of a first pass
        if len(first) < len(briefing):
            # the first pass, streamed: a draft that does not stand is set aside (Redraft)
            quick: Reading | None = None
            with timed("synthesize"):
                async for piece in self._answerer.answer(
                    query, answer_messages(persona, first, query), first, persona, withheld, started
                ):
                    if isinstance(piece, Draft):
                        drafted = True
                        yield piece
                    else:
                        quick = piece
            assert quick is not None  # Answerer.answer always ends with its reading
            stages += ["synthesize", "ground_check"]
            if self._answerer.stands(query, quick, first):
                turn.sources = first
                if not self._settings.ask_confirm_first_pass:
                    yield quick
                    return
                stages.append("confirm")
                with timed("confirm"):
                    whole = await self._answerer.read(
                        query,
                        answer_messages(persona, briefing, query),
                        briefing,
                        persona,
                        withheld,
                    )
                if self._answerer.confirms(query, quick, whole, briefing):
                    yield quick
                    return
                stages.append("replace")
                turn.sources = briefing
                if drafted:
                    yield Redraft(f"all {len(briefing)} sources answered otherwise")
                if not abstain_reason(query, whole, briefing, self._settings.abstain_below):
                    yield Draft(whole.answer)  # an abstention comes in the result
                yield whole
                return
            stages.append("widen")
            if drafted:  # the reader is told the draft they saw goes
                yield Redraft(f"reading all {len(briefing)} sources")
        reading: Reading | None = None
        with timed("synthesize"):
            async for piece in self._answerer.answer(
                query,
                answer_messages(persona, briefing, query),
                briefing,
                persona,
                withheld,
                None if drafted else started,  # first words are timed once per ask
            ):
                if isinstance(piece, Draft):
                    yield piece
                else:
                    reading = piece
        stages += ["synthesize", "ground_check"]
        assert reading is not None  # Answerer.answer always ends with its reading
        yield reading

    async def _complete(
        self, turn: AskTurn, reading: Reading
    ) -> AsyncGenerator[Draft | Reading, None]:
        """The parts of a compound question the answer left out, then the persona's revise:
        yields what the reader sees added, then the final reading."""
        stages, query, sources = turn.stages, turn.query, turn.sources
        if not abstain_reason(query, reading, sources, self._settings.abstain_below):
            missing = unaddressed_parts(query, reading)
            if missing:
                stages.append("answer_parts")
                with timed("answer_parts"):
                    whole = await self._answerer.answer_parts(
                        query, missing, reading, sources, turn.persona, turn.withheld
                    )
                # The reader sees the added sentences follow the answer; were it read
                # otherwise as a whole, the final answer carries it (a streamed ask is
                # redrafted at most once).
                if whole.answer.startswith(reading.answer) and whole.answer != reading.answer:
                    yield Draft(whole.answer[len(reading.answer) :])
                reading = whole
        if reading.attributed:
            stages.append("attribute")
        if reading.reanchored:
            stages.append("reanchor")
        if "revise" in turn.persona.stages:
            with timed("revise"):
                reading = await self._answerer.revise(
                    query, sources, turn.persona, reading, turn.withheld
                )
            stages.append("revise")
        yield reading


def _count(result: AskResult) -> None:
    ASKS.labels("abstained" if result.abstained else "answered").inc()
    if result.abstained:
        ABSTENTIONS.labels(result.abstain_reason or "ungrounded").inc()
    DROPPED_STEPS.inc(len(result.dropped_steps))
    DROPPED_CITATIONS.labels("ask").inc(len(result.grounding.dropped))
    WITHHELD.labels("ask").inc(result.withheld)

"""Ask (SPEC B1, B8): one structured, cited answer; telemetry but no conversation.

By default an ask is one model call: search the question → numbered sources within a token
budget → the model answers in prose, citing sources by number, streamed → memex grounds and
grades the numbers itself (``answers.py``). On a CPU too slow to read the whole briefing quickly,
the call first reads only the best sources (what it prefills in ``ask_first_pass_seconds``), and
its answer streams. One that does not rest on them is set aside and asked again over the whole
briefing, whose start is the first prompt, so the model reads only what was added. One that does
is the answer, unless ``ask_confirm_first_pass`` has the whole briefing confirm it, unstreamed:
the reader keeps the draft when that answer cites the same notes with the same figures, and gets
that answer instead otherwise.

A compound question ("how much ..., and why?") whose answer leaves a part out gets one short
call per missing part over the same sources (``answer_parts``); what the notes do not answer is
named, never filled in. A sentence that names a command in part is followed by the cited note's
whole line (``to_type.py``).

The data-blind plan hop of SPEC B1 runs only when a question earns it (records, the inbox, a
person's timeline, two questions at once), or always with ``plan_hop=always``; steps that find
nothing fall back to searching the question. A persona may add reframe, seek-counter-evidence and
revise stages, each one more audited model call.

The stages ask shares with chat (check, retrieve, brief, generate and filter, police, record) are
``pipeline.py``'s; ask's own (the persona's extra calls, when to abstain) are ``ask_stages.py``'s.
Ask serves Ask, AskStream and the queued-turn worker alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from memex.orchestrator import as_of as as_of_day
from memex.orchestrator import conflicts
from memex.orchestrator.answers import (
    Reading,
    ReplyStream,
    figures,
    informative,
    read_reply,
    strength,
    unaddressed_parts,
)
from memex.orchestrator.ask_stages import (
    MAX_QUESTION_CHARS,
    PersonaCalls,
    abstain_reason,
    abstention,
)
from memex.orchestrator.audit import AuditedReasoner, tenant_var
from memex.orchestrator.briefing import (
    EMPTY_MEMORY_ANSWER,
    answer_messages,
    part_messages,
    revise_messages,
)
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.items import Citation, GroundingReport, ShownItem, note_path
from memex.orchestrator.lexical import terms
from memex.orchestrator.metrics import (
    ABSTENTIONS,
    ASKS,
    DROPPED_CITATIONS,
    DROPPED_STEPS,
    WITHHELD,
    timed,
)
from memex.orchestrator.persona import Persona, Personas
from memex.orchestrator.pipeline import Pipeline, checked, dated_search
from memex.orchestrator.planner import Plan, Step
from memex.orchestrator.ports import ChatMessage, GenerateOptions
from memex.orchestrator.sources import Source
from memex.shared.errors import InvalidArgument

# Greedy: the same question over the same notes gets the same answer, so `memex eval --replay`
# shows what a change did rather than what sampling did.
ANSWER_TEMPERATURE = 0.0
FIRST_WORDS = "ask_first_words"  # the stage timing when an ask's first words reach the reader
MAX_PART_CALLS = 2  # parts of a compound question asked for again, at most, per ask


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
    as_of: str = ""
    """The day whose memory answered (YYYY-MM-DD); "" for now (docs/as-of.md)."""
    dropped_steps: list[str] = field(default_factory=list)
    # "", "empty", "withheld", "declined", "uncited", "ungrounded", "unsupported", "off_topic"
    # or "uninformative"
    abstain_reason: str = ""


@dataclass(frozen=True)
class Started:
    """The sources are chosen and the model is about to write."""

    model: str
    persona: str
    sources: list[str]
    source_paths: list[str]  # each source's note path, "" for a record


@dataclass(frozen=True)
class Draft:
    """Answer text as the model writes it, source numbers already read as refs (unchecked)."""

    text: str


@dataclass(frozen=True)
class Redraft:
    """The draft so far is set aside: the first pass did not stand, and the model now reads the
    whole briefing; or it stood, but the whole briefing answered otherwise. Drafts after this
    start a new answer."""

    reason: str


@dataclass(frozen=True)
class Finished:
    """The checked answer; always the last event."""

    result: AskResult


AskEvent = Started | Draft | Redraft | Finished


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
                if isinstance(event, Finished):
                    result = event.result
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
        """The ask as events: Started, Draft..., [Redraft, Draft...], Finished. Bad input raises
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
        self,
        tenant: str,
        question: str,
        persona_name: str,
        limit: int,
        started: float,
        include_sensitive: bool,
        as_of: str,
    ) -> AsyncGenerator[AskEvent, None]:
        # check (before any event, so bad input is a plain error)
        question = _checked(question, limit)
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
        sources = p.briefer.sources(
            shown, query, budget=p.briefer.ask_budget(persona, query), limit=limit
        )
        first = p.briefer.first_pass(sources, query)
        briefing = sources
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
            abstain_reason="empty",
            as_of=as_of_day.wire(),
        )
        yield Started(
            p.generator.model,
            persona.name,
            [s.ref for s in sources],
            [note_path(s.item) for s in sources],
        )
        if sources:
            reading: Reading | None = None
            drafted = False  # whether the reader saw any of a first pass
            if len(first) < len(sources):
                # the first pass, streamed: a draft that does not stand is set aside (Redraft)
                quick: Reading | None = None
                with timed("synthesize"):
                    async for piece in self._answer(
                        query,
                        answer_messages(persona, first, query),
                        first,
                        persona,
                        withheld,
                        started,
                    ):
                        if isinstance(piece, Draft):
                            drafted = True
                            yield piece
                        else:
                            quick = piece
                assert quick is not None  # _answer always ends with its reading
                stages += ["synthesize", "ground_check"]
                if self._stands(query, quick, first):
                    reading, sources = quick, first
                    if self._settings.ask_confirm_first_pass:
                        stages.append("confirm")
                        with timed("confirm"):
                            whole = await self._read(
                                query,
                                answer_messages(persona, briefing, query),
                                briefing,
                                persona,
                                withheld,
                            )
                        if not self._confirms(query, quick, whole, briefing):
                            stages.append("replace")
                            reading, sources = whole, briefing
                            if drafted:
                                yield Redraft(f"all {len(briefing)} sources answered otherwise")
                            if not abstain_reason(
                                query, whole, briefing, self._settings.abstain_below
                            ):
                                yield Draft(whole.answer)  # an abstention comes in the result
                else:
                    stages.append("widen")
                    if drafted:  # the reader is told the draft they saw goes
                        yield Redraft(f"reading all {len(sources)} sources")
            if reading is None:
                # generate and filter, then police (``_answer``), then ask's own abstention rules
                with timed("synthesize"):
                    async for piece in self._answer(
                        query,
                        answer_messages(persona, sources, query),
                        sources,
                        persona,
                        withheld,
                        None if drafted else started,  # first words are timed once per ask
                    ):
                        if isinstance(piece, Draft):
                            yield piece
                        else:
                            reading = piece
                stages += ["synthesize", "ground_check"]
            assert reading is not None  # _answer always ends with its reading
            if not abstain_reason(query, reading, sources, self._settings.abstain_below):
                missing = unaddressed_parts(query, reading)
                if missing:
                    stages.append("answer_parts")
                    with timed("answer_parts"):
                        whole = await self._answer_parts(
                            query, missing, reading, sources, persona, withheld
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
            if "revise" in persona.stages:
                with timed("revise"):
                    reading = await self._revise(query, sources, persona, reading, withheld)
                stages.append("revise")
            self._settle(result, query, reading, sources)
        elif withheld:
            result.answer = "Only sensitive notes match this question, and they were withheld."
            result.abstain_reason = "withheld"
        if withheld:
            result.answer = f"{result.answer}\n\n{p.sensitivity.withheld_note(len(withheld))}"
        # record
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.turn_id = await p.recorder.record(
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
            report=result.grounding,
            sources=sources,
        )
        yield Finished(result)

    def _stands(self, question: str, reading: Reading, sources: list[Source]) -> bool:
        """Whether a first pass's answer is the answer: it would not abstain, and at least one
        citation holds half its claim or more (not only an inference)."""
        reason = abstain_reason(question, reading, sources, self._settings.abstain_below)
        return not reason and any(c.support != "inference" for c in reading.citations)

    def _confirms(
        self, question: str, draft: Reading, whole: Reading, sources: list[Source]
    ) -> bool:
        """Whether the first pass's draft stays the answer after the whole briefing was read:
        that answer stands too, and either says the same (the same notes cited, the same
        figures) or rests on its sources less well than the draft does (inference against a
        paraphrase: "11 pieces survived" against the draft's "7 survived", which the note says
        word for word). A whole-briefing answer that would abstain replaces the draft only when
        the model declined (the notes do not answer: the draft was a guess); one that is only
        broken (uncited, cut by the claim check, off the question) says nothing against it,
        and replacing the draft with its abstention was 3 of the til vault's 64 answers."""
        reason = abstain_reason(question, whole, sources, self._settings.abstain_below)
        if reason:
            return reason != "declined"
        same = {c.ref for c in draft.citations} == {c.ref for c in whole.citations} and (
            figures(draft.claims) == figures(whole.claims)
        )
        return same or strength(whole) < strength(draft)

    async def _read(
        self,
        question: str,
        messages: list[ChatMessage],
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
    ) -> Reading:
        """One unstreamed answer to ``messages`` over ``sources``, and what checking makes of
        it."""
        reading: Reading | None = None
        async for piece in self._answer(question, messages, sources, persona, withheld, None):
            if isinstance(piece, Reading):
                reading = piece
        assert reading is not None  # _answer always ends with its reading
        return reading

    def _settle(
        self, result: AskResult, question: str, reading: Reading, sources: list[Source]
    ) -> None:
        """Abstain unless the answer rests on a source (SPEC B10); name the closest notes."""
        result.grounding = reading.report
        reason = abstain_reason(question, reading, sources, self._settings.abstain_below)
        result.abstained = bool(reason)
        result.abstain_reason = reason
        if result.abstained:
            result.citations = []
            result.answer = abstention(sources)
        else:
            differ = conflicts.find(reading, sources, question)
            result.citations = conflicts.citations(differ, reading.citations)
            result.answer = (
                reading.answer
                + conflicts.said(differ)
                + "".join(
                    f"\n\nAs your note writes it: `{line}` {ref}" for line, ref in reading.to_type
                )
                + "".join(
                    f"\n\nYour notes don't answer this part: {part}"
                    for part in reading.unanswered_parts
                )
            )

    async def _answer(
        self,
        question: str,
        messages: list[ChatMessage],
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
        started: float | None,
    ) -> AsyncGenerator[Draft | Reading, None]:
        """Generate and filter, then police: streams the model's answer to ``question`` as
        Drafts, then yields what checking makes of it. The first words are timed from
        ``started`` (None: a revision, not timed)."""
        reply = ReplyStream(sources, question)
        generated = self._p.generator.stream(
            reply,
            purpose="ask_synthesize",
            persona=persona.name,
            messages=messages,
            options=GenerateOptions(
                max_tokens=self._settings.ask_max_tokens, temperature=ANSWER_TEMPERATURE
            ),
            withheld=withheld,
            first_words=FIRST_WORDS,
            started=started,
        )
        async with contextlib.aclosing(generated):
            async for text in generated:
                yield Draft(text)
        with timed("ground_check"):
            reading = reply.read()
        yield reading

    async def _answer_parts(
        self,
        question: str,
        parts: list[str],
        reading: Reading,
        sources: list[Source],
        persona: Persona,
        withheld: list[ShownItem],
    ) -> Reading:
        """Asks again for each part of a compound question the answer left out, in one short
        call each over the same sources (the prompt starts as the answer's did, so the model
        reads only the part). An answer to the part that stands is read together with the
        first answer, the claim check and all; a part the model declines, or fills with what no
        source holds, is named as one the notes do not answer, never filled in."""
        unanswered = list(reading.unanswered_parts)
        for part in parts[:MAX_PART_CALLS]:
            extra = await self._read(
                question,
                part_messages(persona, sources, question, reading.answer, part),
                sources,
                persona,
                withheld,
            )
            stands = (
                extra.citations
                and not extra.main_unsupported
                and not abstain_reason(part, extra, sources, self._settings.abstain_below)
                and informative(f"{part}\n{reading.answer}", extra)  # not said again
            )
            if stands:
                whole = read_reply(
                    f"{reading.raw.rstrip()} {extra.raw.strip()}", "", sources, question
                )
                if len(whole.claims) > len(reading.claims) and not abstain_reason(
                    question, whole, sources, self._settings.abstain_below
                ):
                    reading = whole
                    continue
            asked = set(terms(part))
            shares = asked & set(terms(reading.answer))
            if (extra.declined or extra.dropped_claims) and asked and not shares:
                # The notes do not say, or what the model wrote for it is in no source: said
                # plainly. Not when the answer shares a word with the part ("to show what
                # would be synced, add -v"): a sentence may answer it in words that tie it to
                # another part, and a small model declines a part it has just answered. Nor for
                # a part with no word of its own ("Why?"), for the same reason.
                unanswered.append(part)
        return dataclasses.replace(
            reading,
            unanswered_parts=tuple(dict.fromkeys([*reading.unanswered_parts, *unanswered])),
        )

    async def _revise(
        self,
        question: str,
        sources: list[Source],
        persona: Persona,
        draft: Reading,
        withheld: list[ShownItem],
    ) -> Reading:
        weak = [c.ref for c in draft.citations if c.support == "inference"]
        problems = (
            f"{draft.report.grounded} of {draft.report.cited} source numbers named a source "
            f"shown; these did not: {', '.join(draft.report.dropped) or 'none'}; weakly "
            f"supported: {', '.join(weak) or 'none'}."
        )
        messages = revise_messages(persona, sources, question, draft.answer, problems)
        return await self._read(question, messages, sources, persona, withheld)


def _count(result: AskResult) -> None:
    ASKS.labels("abstained" if result.abstained else "answered").inc()
    if result.abstained:
        ABSTENTIONS.labels(result.abstain_reason or "ungrounded").inc()
    DROPPED_STEPS.inc(len(result.dropped_steps))
    DROPPED_CITATIONS.labels("ask").inc(len(result.grounding.dropped))
    WITHHELD.labels("ask").inc(result.withheld)


def _checked(question: str, limit: int) -> str:
    question = checked(
        question, name="question", hint="ask something", max_chars=MAX_QUESTION_CHARS
    )
    if not 0 <= limit <= 50:
        raise InvalidArgument(f"limit must be between 1 and 50 (0 for the default), not {limit}")
    return question

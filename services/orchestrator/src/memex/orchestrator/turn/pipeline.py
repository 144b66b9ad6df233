"""The one pipeline ask and chat share: check → retrieve → brief → generate and filter → police →
record (SPEC B1-B4, B7-B12).

Each stage is a small function or class that takes exactly what it needs, built once when the
service starts (``service.build_orchestrator``):

- check: ``checked`` (the text) and the persona (``Personas.get``);
- retrieve: ``Retriever`` (the memory port), then ``Sensitivity`` (what the model may see, B3);
- brief: ``Briefer`` (numbered sources within a token budget, from settings and reasoner info);
- generate and filter: ``Generator`` (``turn/generation.py``: one audited, streamed model call read
  through a ``ReplyStream``: ``<think>`` dropped, refs shown, repeats cut);
- police: ``ReplyStream.read`` (``answer/``: numbers grounded, quotes and support graded);
- record: ``Recorder`` (the telemetry turn and its retrievals, B12; with an answer's sources,
  its evidence bundle too, ``record/evidence.py``).

Ask (``ask/asker.py``: Ask, AskStream and the queued-turn worker) adds its persona stages and its
abstention rules; chat (``conversation/chat.py``) adds the history and the conversation.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memex.orchestrator.answer import sources as briefing_sources
from memex.orchestrator.answer.sources import Source, estimate_tokens
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.conversation.conversations import Message
from memex.orchestrator.memory import as_of
from memex.orchestrator.memory.items import Citation, GroundingReport, ShownItem
from memex.orchestrator.memory.periods import named_period
from memex.orchestrator.ports import Memory, ReasonerInfo, SearchSpec
from memex.orchestrator.record import evidence
from memex.orchestrator.record.telemetry import TelemetryStore
from memex.orchestrator.turn.fusion import rrf
from memex.orchestrator.turn.generation import Generator
from memex.orchestrator.turn.persona import Persona
from memex.orchestrator.turn.planner import Step
from memex.shared.errors import InvalidArgument

PROMPT_VERSION = "2026-12-04.1"  # today's date after the sources
# However slow the model, a chat reads about 1,000 characters of sources (two or three short
# excerpts): with less, the 1.5B model answered "I don't know" to questions its notes answer, or
# answered from the one note it saw when another held the answer. An ask's first pass has its own
# floor, ``ask_first_pass_min_tokens``.
MIN_SOURCES_TOKENS = 300


def checked(text: str, *, name: str, hint: str, max_chars: int) -> str:
    """``text`` stripped; InvalidArgument when it is empty (``"<name> is empty: <hint>"``) or
    longer than ``max_chars``. Runs before any event, so bad input is a plain error."""
    text = text.strip()
    if not text:
        raise InvalidArgument(f"{name} is empty: {hint}")
    if len(text) > max_chars:
        raise InvalidArgument(f"{name} has {len(text)} characters; the limit is {max_chars}")
    return text


@dataclass(frozen=True)
class Sensitivity:
    """Which retrieved items the model may see (SPEC B3, and issue 11's read policy).

    Two rules, either of which withholds a sensitive item: the reasoner's (B3: a remote reasoner
    never sees one, a local one only if so set) and the request's (an answer is a read: its text
    and citations go to whoever called, perhaps a cloud model through MCP, so sensitive notes
    reach the model only when the request set include_sensitive, which the surface allows)."""

    local: bool  # the reasoner runs on this machine
    local_sees_sensitive: bool  # the setting: a local reasoner may see sensitive items

    @property
    def hides_sensitive(self) -> bool:
        """Sensitive items are withheld from remote reasoners, and from local ones if so set."""
        return not self.local or not self.local_sees_sensitive

    def split(
        self, items: Sequence[ShownItem], *, include_sensitive: bool
    ) -> tuple[list[ShownItem], list[ShownItem]]:
        """(items the model may see, items withheld): sensitive ones are withheld when the
        reasoner hides them or the request did not ask for them."""
        if include_sensitive and not self.hides_sensitive:
            return list(items), []
        return [i for i in items if not i.sensitive], [i for i in items if i.sensitive]

    def withheld_note(self, count: int) -> str:
        """The emphasized note appended when sensitive items were withheld (SPEC B3). A remote
        reasoner's answer is "the cloud answer"; a local one withholds them from "this answer"
        (the setting, or a request that did not ask for them)."""
        sources = "source" if count == 1 else "sources"
        where = "the cloud answer" if not self.local else "this answer"
        return f"_({count} sensitive {sources} withheld from {where}.)_"


def dated_search(question: str, query: str, today: dt.date | None = None) -> tuple[Step, ...]:
    """A search for ``query`` held to the notes dated in the period ``question`` names, if it
    names one ("What did I do on 19 July?"); fused with the plain search, which still finds a
    note that mentions the day without being dated on it."""
    period = named_period(question, today or as_of.today())
    if period is None:
        return ()
    since, until = period.iso()
    return (Step("search_vault", query=query, since=since, until=until),)


def briefed_belief(item: ShownItem, persona: Persona) -> bool:
    """Whether a looked-up item may be briefed as the beliefs channel would brief it (SPEC B6):
    anything but a belief; an active belief; a contested one for a persona that includes them
    (the skeptic); never one the person rejected (docs/reflect.md)."""
    if item.kind != "belief":
        return True
    status = str(item.attributes.get("status") or "active").casefold()
    return status == "active" or (status == "contested" and persona.include_contested)


class Retriever:
    """Reads memory through the retrieval port, shaped by a persona (always local, no model)."""

    def __init__(self, memory: Memory, rrf_k: int, record_collections: Sequence[str] = ()) -> None:
        self._memory = memory
        self._rrf_k = rrf_k
        self._record_collections = tuple(record_collections)

    @staticmethod
    def spec(persona: Persona, query: str, k: int | None = None) -> SearchSpec:
        """A search shaped by the persona's channels, window and weights."""
        return SearchSpec(
            query=query,
            channels=tuple(persona.channels),
            k=k or persona.chunks,
            window_days=persona.time_window_days,
            include_contested=persona.include_contested,
            observation_weight=persona.observation_weight,
        )

    async def search(
        self,
        tenant: str,
        persona: Persona,
        query: str,
        k: int | None = None,
        since: str = "",
        until: str = "",
    ) -> list[ShownItem]:
        """Hybrid search for ``query`` over the notes and the record collections the model's
        own searches cover, best first; only items dated in ``since``..``until`` when given."""
        spec = replace(
            self.spec(persona, query, k),
            collections=self._record_collections,
            since=since,
            until=until,
        )
        return await self._memory.search(tenant, spec)

    async def run_steps(
        self, tenant: str, steps: Sequence[Step], persona: Persona
    ) -> list[list[ShownItem]]:
        """Runs every plan step locally and concurrently; one ranked list per step."""

        async def run(step: Step) -> list[ShownItem]:
            if step.tool == "search_vault":
                return await self.search(
                    tenant, persona, step.query, since=step.since, until=step.until
                )
            if step.tool == "query_records":
                found = await self._memory.query_records(
                    tenant, step.collection, step.filters, "", persona.chunks
                )
                return [i for i in found if briefed_belief(i, persona)]
            if step.tool == "person_timeline":
                return await self._memory.person_timeline(tenant, step.entity_id, persona.chunks)
            return await self._memory.list_inbox(tenant, persona.chunks)

        return list(await asyncio.gather(*(run(step) for step in steps)))

    def fuse(self, ranked: Sequence[Sequence[ShownItem]]) -> list[ShownItem]:
        """One list, best first. Retrieval has already fused its channels, so one search's list
        is kept as it came, scores included; the lists of several searches (plan steps, a dated
        search, counter-evidence) are fused by Reciprocal Rank Fusion."""
        if len(ranked) == 1:
            return list(ranked[0])
        return rrf(ranked, self._rrf_k)


class Briefer:
    """Numbered sources for the model, sized in tokens (SPEC B7, ``answer/sources.py``)."""

    def __init__(self, settings: OrchestratorSettings, info: ReasonerInfo) -> None:
        self._settings = settings
        self._info = info

    @property
    def prefill_tokens_per_second(self) -> float:
        """The reasoner's prefill speed the budgets are sized by (0: unknown)."""
        return self._info.prefill_tokens_per_second

    def follow_speed(self, prefill_tokens_per_second: float) -> None:
        """Takes the reasoner's latest prefill speed: measured as the stack started, while its
        other services competed for the cores, and raised once real prompts show what the
        machine does."""
        self._info = replace(self._info, prefill_tokens_per_second=prefill_tokens_per_second)

    def ask_budget(self, persona: Persona, question: str) -> int:
        """Tokens an ask's sources may take: the setting, within what the context leaves."""
        s = self._settings
        fixed = estimate_tokens(persona.system_prompt + question) + 250  # rules, template
        room = self._info.context_length - s.ask_max_tokens - fixed
        return max(100, min(s.briefing_tokens, room))

    def first_pass(self, sources: list[Source], question: str) -> list[Source]:
        """The leading ``sources`` an ask's first pass reads (``first_pass_budget``); all of them
        when there is no first pass."""
        budget = self.first_pass_budget(question)
        return briefing_sources.leading(sources, budget) if budget else sources

    def first_pass_budget(self, question: str) -> int:
        """Tokens of an ask's first pass: what the reasoner reads in ``ask_first_pass_seconds``
        at its measured speed, less the question, and never under ``ask_first_pass_min_tokens``;
        0 when there is no first pass."""
        s = self._settings
        rate, seconds = self._info.prefill_tokens_per_second, s.ask_first_pass_seconds
        if rate <= 0 or seconds <= 0:
            return 0
        return max(s.ask_first_pass_min_tokens, int(rate * seconds) - estimate_tokens(question))

    def chat_budget(self, message: str, history: Sequence[Message]) -> int:
        """Tokens a chat's sources may take: what the reasoner reads in
        ``chat_first_words_seconds`` at its measured speed, less the message and the history."""
        s = self._settings
        rate, seconds = self._info.prefill_tokens_per_second, s.chat_first_words_seconds
        if rate <= 0 or seconds <= 0:
            return s.briefing_tokens
        others = estimate_tokens(message) + sum(estimate_tokens(m.text) + 4 for m in history)
        return max(MIN_SOURCES_TOKENS, min(s.briefing_tokens, int(rate * seconds) - others))

    def sources(
        self, items: Sequence[ShownItem], query: str, *, budget: int, limit: int
    ) -> list[Source]:
        """The items the model may see as numbered sources, best first, within ``budget``."""
        return briefing_sources.select(
            items,
            query,
            token_budget=budget,
            excerpt_chars=self._settings.excerpt_chars,
            lead_excerpt_chars=self._settings.lead_excerpt_chars,
            limit=limit,
        )


class Recorder:
    """Writes telemetry (SPEC B12): a turn per search, ask and chat, a row per retrieved item;
    and an answer's evidence bundle (issue 37) with its turn."""

    def __init__(self, telemetry: TelemetryStore, model: str) -> None:
        self._telemetry = telemetry
        self._model = model

    async def record(
        self,
        *,
        tenant: str,
        kind: str,
        query: str,
        latency_ms: float,
        persona: str,
        items: Sequence[ShownItem],
        citations: Sequence[Citation] = (),
        grounding: float | None = None,
        abstained: bool = False,
        conversation_id: str | None = None,
        dropped_steps: Sequence[str] = (),
        answer: str = "",
        report: GroundingReport | None = None,
        sources: Sequence[Source] | None = None,
        message_id: str = "",
    ) -> str:
        """Writes the telemetry turn and its retrieval rows, off the event loop; returns the
        turn id. An ask or chat passes its ``answer``; it is kept with the refs of ``citations``
        (for an ask's replay). ``report``'s claim check is kept too. An answer passes the
        ``sources`` the model was shown (a chat reply its ``message_id`` too): its evidence
        bundle is written in the same transaction."""
        cited = {c.item_id for c in citations}
        bundle = None
        if sources is not None:
            bundle = evidence.build(
                kind=kind,
                question=query,
                answer=answer,
                abstained=abstained,
                model=self._model,
                prompt_version=PROMPT_VERSION,
                persona=persona,
                sources=sources,
                citations=citations,
                report=report,
                conversation_id=conversation_id,
                message_id=message_id,
            )
        return await asyncio.to_thread(
            self._telemetry.record_telemetry,
            tenant=tenant,
            kind=kind,
            query=query,
            latency_ms=latency_ms,
            model=self._model,
            persona=persona,
            prompt_version=PROMPT_VERSION,
            grounding_score=grounding,
            abstained=abstained,
            conversation_id=conversation_id,
            dropped_steps=dropped_steps,
            answer=answer,
            cited_refs=list(dict.fromkeys(c.ref for c in citations)),
            claim_check=report.specifics if report else (),
            dropped_claims=report.dropped_claims if report else (),
            retrievals=[(i.item_id, i.score, i.channel_scores, i.item_id in cited) for i in items],
            evidence=bundle,
            message_id=message_id,
        )


@dataclass(frozen=True)
class Pipeline:
    """The shared stages, each built with only what it needs; ask and chat run them in order."""

    retriever: Retriever
    sensitivity: Sensitivity
    briefer: Briefer
    generator: Generator
    recorder: Recorder

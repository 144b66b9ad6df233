"""The orchestrator's engine: ask, chat, memory reads, conversations and turns, wired once at
start.

``build_orchestrator`` builds each pipeline stage (``turn/pipeline.py``) with exactly what it needs
and hands the stages to ask and chat; ``open_orchestrator`` opens the store and the channels around
it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from memex.orchestrator.ask.asker import Asker
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.conversation.chat import Chatter
from memex.orchestrator.conversation.conversations import Conversation, Message
from memex.orchestrator.conversation.text import conversation_title
from memex.orchestrator.learning.reflect import Reflector
from memex.orchestrator.memory import as_of as as_of_day
from memex.orchestrator.memory.forget import NoteForgetter, NoteReceipt
from memex.orchestrator.memory.policy import WITHHELD_READ
from memex.orchestrator.memory.reads import Reads
from memex.orchestrator.ports import BeliefMemory, Memory, Reasoner, ReasonerInfo
from memex.orchestrator.queue import events as turn_events
from memex.orchestrator.record import evidence
from memex.orchestrator.record.audit import AuditedReasoner
from memex.orchestrator.state.store import OrchestratorStore, Turn
from memex.orchestrator.turn.generation import Generator
from memex.orchestrator.turn.persona import Personas, load_personas
from memex.orchestrator.turn.pipeline import Briefer, Pipeline, Recorder, Retriever, Sensitivity
from memex.orchestrator.wire.clients import GrpcMemory, GrpcReasoner
from memex.shared.errors import InvalidArgument, MemexError, ResourceExhausted, Unavailable

log = logging.getLogger(__name__)

REASONER_SPEED_SECONDS = 15.0


@dataclass
class Orchestrator:
    """What the servicer and the chat worker call."""

    settings: OrchestratorSettings
    store: OrchestratorStore
    personas: Personas
    pipeline: Pipeline
    asker: Asker
    chatter: Chatter
    reads: Reads
    forgetter: NoteForgetter
    reflector: Reflector | None = None  # needs a memory that writes beliefs (GrpcMemory does)

    def tenant(self, tenant: str) -> str:
        """The request's tenant, or the default one."""
        return tenant or self.settings.default_tenant

    async def create_turn(
        self,
        tenant: str,
        thread_id: str,
        text: str,
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> Turn:
        """A pending user turn for the chat worker (SPEC B13). ``include_sensitive`` and
        ``as_of`` (checked now, as an ask checks it) are stored with the turn: the worker answers
        later, and must answer under what this request asked."""
        text = text.strip()
        if not text:
            raise InvalidArgument("text is empty: write a question")
        day = as_of_day.parse(as_of)
        waiting = await asyncio.to_thread(self.store.pending_turns)
        if waiting.count >= self.settings.max_pending_turns:
            # One worker answers turns one at a time: past this, a new turn would only wait
            # longer, so say so now (the load test found the queue growing without bound).
            raise ResourceExhausted(
                f"{waiting.count} questions are already waiting for an answer (the oldest for "
                f"{waiting.oldest_age_seconds:.0f} s): ask again once some are answered"
            )
        return await asyncio.to_thread(
            self.store.create_turn,
            tenant,
            thread_id,
            text,
            conversation_title(text),
            include_sensitive=include_sensitive,
            as_of=day.isoformat() if day is not None else "",
        )

    async def conversation(
        self, tenant: str, conversation_id: str, *, include_sensitive: bool = False
    ) -> tuple[Conversation, list[Message]]:
        """A conversation as this request may read it: a reply that drew on sensitive notes is
        a placeholder unless the request set ``include_sensitive`` (issue 11)."""
        conversation, messages = await asyncio.to_thread(
            self.store.get_conversation, tenant, conversation_id
        )
        if include_sensitive:
            return conversation, messages
        return conversation, [
            replace(m, text=WITHHELD_READ, citations=[], withheld=True) if m.sensitive else m
            for m in messages
        ]

    async def thread_turns(
        self, tenant: str, thread_id: str, *, include_sensitive: bool = False
    ) -> list[Turn]:
        """A thread's turns as this request may read them: an answer to a question that let the
        model see sensitive notes is a placeholder unless the request set ``include_sensitive``."""
        turns = await asyncio.to_thread(self.store.list_turns, tenant, thread_id)
        if include_sensitive:
            return turns
        asked = {t.id for t in turns if t.role == "user" and t.include_sensitive}
        return [
            replace(t, text=WITHHELD_READ, citations=[], withheld=True)
            if t.role == "assistant" and t.reply_to in asked
            else t
            for t in turns
        ]

    async def watch_thread(
        self, tenant: str, thread_id: str, *, include_sensitive: bool = False
    ) -> AsyncGenerator[tuple[Turn, bool], None]:
        """Live turn state (issue 37): the thread's turns as ``thread_turns`` reads them, each
        with True, then each turn again (False) when it changes; ends when the thread is deleted.
        NotFound for an unknown thread, InvalidArgument for an empty id."""
        if not thread_id.strip():
            raise InvalidArgument(
                "thread_id is empty: give a thread id (GET /v1/threads lists them)"
            )

        async def read() -> list[Turn]:
            return await self.thread_turns(tenant, thread_id, include_sensitive=include_sensitive)

        async for change in turn_events.watch(
            self.store.events,
            tenant,
            thread_id,
            read,
            listen_url=self.store.listen_url,
        ):
            yield change

    async def evidence(
        self, tenant: str, answer_id: str, *, include_sensitive: bool = False
    ) -> tuple[dict[str, Any], int]:
        """The evidence bundle of an answer (issue 37) as this request may read it, and how many
        sensitive excerpts were left out (``evidence.readable``). ``answer_id`` is any id of the
        answer: an ask's turn id, a chat reply's message id or a queued answer's turn id.
        InvalidArgument for an empty id, NotFound for one without a bundle."""
        bundle = await asyncio.to_thread(self.store.evidence, tenant, answer_id)
        return evidence.readable(bundle, include_sensitive=include_sensitive)

    # -- forget (issue 11) -------------------------------------------------------------------
    async def delete_thread(self, tenant: str, thread_id: str) -> tuple[int, int]:
        """Forgets a queued-chat thread with its turns: (turns deleted, turns left)."""
        if not thread_id.strip():
            raise InvalidArgument(
                "thread_id is empty: give a thread id (GET /v1/threads lists them)"
            )
        deleted = await asyncio.to_thread(self.store.delete_thread, tenant, thread_id)
        await asyncio.to_thread(self.store.scrub)  # best effort: the old pages in the WAL
        return deleted

    def beliefs(self) -> Reflector:
        """The learning loop; Unavailable where this orchestrator was built without one."""
        if self.reflector is None:
            raise Unavailable("this orchestrator has no belief store (retrieval) to reflect into")
        return self.reflector

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> NoteReceipt:
        """Forgets a note everywhere and checks every store (``forget.NoteForgetter``)."""
        return await self.forgetter.forget(tenant, note, dry_run=dry_run)


def build_orchestrator(
    settings: OrchestratorSettings,
    store: OrchestratorStore,
    memory: Memory,
    reasoner: Reasoner,
    info: ReasonerInfo,
    personas: Personas,
    beliefs: BeliefMemory | None = None,
) -> Orchestrator:
    """The stages, each with only what it needs, and ask and chat over them. Every model call
    goes through one ``AuditedReasoner`` that logs to the store's LLM log (SPEC B4)."""
    audited = AuditedReasoner(reasoner, store, info.model)
    sensitivity = Sensitivity(info.local, settings.local_sees_sensitive)
    pipeline = Pipeline(
        retriever=Retriever(memory, settings.rrf_k, settings.search_record_collections),
        sensitivity=sensitivity,
        briefer=Briefer(settings, info),
        generator=Generator(audited),
        recorder=Recorder(store, info.model),
    )
    return Orchestrator(
        settings,
        store,
        personas,
        pipeline,
        Asker(settings, personas, pipeline, audited),
        Chatter(settings, personas, pipeline, store),
        Reads(memory, personas, pipeline.recorder),
        NoteForgetter(memory, store),
        Reflector(beliefs, audited, sensitivity, settings) if beliefs is not None else None,
    )


async def _reasoner_info(reasoner: GrpcReasoner, wait_seconds: float) -> ReasonerInfo:
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return await reasoner.info()
        except MemexError as exc:
            if time.monotonic() > deadline:
                raise Unavailable(f"the reasoner did not answer Info: {exc.message}") from exc
            await asyncio.sleep(0.5)


async def _follow_reasoner_speed(
    reasoner_info: Callable[[], Awaitable[ReasonerInfo]], briefer: Briefer
) -> None:
    """Re-reads the reasoner's prefill speed every ``REASONER_SPEED_SECONDS``: the speed it
    measured while the stack started rises once real prompts show what the machine does, and
    it sizes an ask's first pass and a chat's sources."""
    while True:
        await asyncio.sleep(REASONER_SPEED_SECONDS)
        try:
            rate = (await reasoner_info()).prefill_tokens_per_second
        except MemexError as exc:  # restarting, say: the last speed stands meanwhile
            log.debug("the reasoner's Info failed: %s", exc.message)
            continue
        if rate and rate != briefer.prefill_tokens_per_second:
            log.info("reasoner prefill speed now %.0f tokens/s", rate)
            briefer.follow_speed(rate)


@contextlib.asynccontextmanager
async def open_orchestrator(
    settings: OrchestratorSettings, wait_seconds: float = 120.0
) -> AsyncIterator[Orchestrator]:
    """Opens the store and the channels to retrieval and reasoner, and always closes them."""
    store = OrchestratorStore(settings.state_location, pool_size=settings.state_pool_size)
    memory = GrpcMemory(settings.retrieval_addr)
    reasoner = GrpcReasoner(settings.reasoner_addr)
    try:
        info = await _reasoner_info(reasoner, wait_seconds)
        log.info(
            "reasoner: %s %s (%s)", info.engine, info.model, "local" if info.local else "remote"
        )
        personas = load_personas(settings.personas_dir)
        orchestrator = build_orchestrator(
            settings, store, memory, reasoner, info, personas, beliefs=memory
        )
        following = asyncio.create_task(
            _follow_reasoner_speed(reasoner.info, orchestrator.pipeline.briefer)
        )
        try:
            yield orchestrator
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
    finally:
        await memory.close()
        await reasoner.close()
        store.close()

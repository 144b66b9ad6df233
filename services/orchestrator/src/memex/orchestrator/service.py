"""The orchestrator's engine: the context plus ask, chat, search, conversations and turns."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from memex.orchestrator.ask import Asker
from memex.orchestrator.audit import AuditedReasoner
from memex.orchestrator.chat import Chatter
from memex.orchestrator.clients import GrpcMemory, GrpcReasoner
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.core import Context
from memex.orchestrator.forget import NoteForgetter, NoteReceipt
from memex.orchestrator.items import ShownItem
from memex.orchestrator.metrics import timed
from memex.orchestrator.persona import load_personas
from memex.orchestrator.ports import NoteEraser, ReasonerInfo
from memex.orchestrator.store import OrchestratorStore, Turn
from memex.orchestrator.text import conversation_title
from memex.shared.errors import FailedPrecondition, InvalidArgument, MemexError, Unavailable

log = logging.getLogger(__name__)


@dataclass
class Orchestrator:
    """What the servicer and the chat worker call."""

    context: Context
    asker: Asker
    chatter: Chatter

    def tenant(self, tenant: str) -> str:
        """The request's tenant, or the default one."""
        return tenant or self.context.settings.default_tenant

    async def search(
        self, tenant: str, query: str, persona_name: str, k: int
    ) -> tuple[list[ShownItem], str]:
        """Hybrid search shaped by a persona, with telemetry (SPEC B12)."""
        if not query.strip():
            raise InvalidArgument("query is empty")
        started = time.perf_counter()
        c = self.context
        persona = c.personas.get(persona_name, "ask")
        with timed("search"):
            items = await c.memory.search(tenant, c.search_spec(persona, query, k or None))
        turn_id = await c.record(
            tenant=tenant,
            kind="search",
            query=query,
            persona=persona.name,
            items=items,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
        return items, turn_id

    async def create_turn(self, tenant: str, thread_id: str, text: str) -> Turn:
        """A pending user turn for the chat worker (SPEC B13)."""
        text = text.strip()
        if not text:
            raise InvalidArgument("text is empty: write a question")
        return await asyncio.to_thread(
            self.context.store.create_turn, tenant, thread_id, text, conversation_title(text)
        )

    # -- forget (issue 11) -------------------------------------------------------------------
    async def delete_thread(self, tenant: str, thread_id: str) -> tuple[int, int]:
        """Forgets a queued-chat thread with its turns: (turns deleted, turns left)."""
        if not thread_id.strip():
            raise InvalidArgument(
                "thread_id is empty: give a thread id (GET /v1/threads lists them)"
            )
        deleted = await asyncio.to_thread(self.context.store.delete_thread, tenant, thread_id)
        await asyncio.to_thread(self.context.store.scrub)  # best effort: the old pages in the WAL
        return deleted

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> NoteReceipt:
        """Forgets a note everywhere and checks every store (``forget.NoteForgetter``)."""
        memory = self.context.memory
        if not isinstance(memory, NoteEraser):
            raise FailedPrecondition("this orchestrator's memory cannot forget notes")
        return await NoteForgetter(memory, self.context.store).forget(tenant, note, dry_run=dry_run)


async def _reasoner_info(reasoner: GrpcReasoner, wait_seconds: float) -> ReasonerInfo:
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return await reasoner.info()
        except MemexError as exc:
            if time.monotonic() > deadline:
                raise Unavailable(f"the reasoner did not answer Info: {exc.message}") from exc
            await asyncio.sleep(0.5)


@contextlib.asynccontextmanager
async def open_orchestrator(
    settings: OrchestratorSettings, wait_seconds: float = 120.0
) -> AsyncIterator[Orchestrator]:
    """Opens the store and the channels to retrieval and reasoner, and always closes them."""
    store = OrchestratorStore(settings.state_path)
    memory = GrpcMemory(settings.retrieval_addr)
    reasoner = GrpcReasoner(settings.reasoner_addr)
    try:
        info = await _reasoner_info(reasoner, wait_seconds)
        log.info(
            "reasoner: %s %s (%s)", info.engine, info.model, "local" if info.local else "remote"
        )
        context = Context(
            settings,
            store,
            memory,
            AuditedReasoner(reasoner, store, info.model),
            info,
            load_personas(settings.personas_dir),
        )
        yield Orchestrator(context, Asker(context), Chatter(context))
    finally:
        await memory.close()
        await reasoner.close()
        store.close()

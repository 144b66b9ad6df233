"""The orchestrator's engine: the context plus ask, chat, memory reads, conversations and turns."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from memex.orchestrator.ask import Asker
from memex.orchestrator.audit import AuditedReasoner
from memex.orchestrator.chat import Chatter
from memex.orchestrator.clients import GrpcMemory, GrpcReasoner
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.core import Context
from memex.orchestrator.persona import load_personas
from memex.orchestrator.ports import ReasonerInfo
from memex.orchestrator.reads import Reads
from memex.orchestrator.store import OrchestratorStore, Turn
from memex.orchestrator.text import conversation_title
from memex.shared.errors import InvalidArgument, MemexError, Unavailable

log = logging.getLogger(__name__)


@dataclass
class Orchestrator:
    """What the servicer and the chat worker call."""

    context: Context
    asker: Asker
    chatter: Chatter
    reads: Reads = field(init=False)

    def __post_init__(self) -> None:
        self.reads = Reads(self.context)

    def tenant(self, tenant: str) -> str:
        """The request's tenant, or the default one."""
        return tenant or self.context.settings.default_tenant

    async def create_turn(self, tenant: str, thread_id: str, text: str) -> Turn:
        """A pending user turn for the chat worker (SPEC B13)."""
        text = text.strip()
        if not text:
            raise InvalidArgument("text is empty: write a question")
        return await asyncio.to_thread(
            self.context.store.create_turn, tenant, thread_id, text, conversation_title(text)
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

"""Stand-ins for the retrieval and reasoner stages, for unit tests of the orchestrator's logic,
with what the ask tests script them with (``reasoner``, ``TwoAnswers``) and the numbered sources
that the answer-reading tests read against (``source``, ``SOURCES``).

The real stages are exercised by the end-to-end tests; these only let each rule be tested alone.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from memex.orchestrator.answer.lexical import segments
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.memory.items import Note, Record, ShownItem, Timeline
from memex.orchestrator.ports import (
    ChatMessage,
    ForgottenNote,
    GenerateOptions,
    NoteFileHead,
    ReasonerInfo,
    SearchSpec,
    Usage,
)
from memex.orchestrator.service import Orchestrator, build_orchestrator
from memex.orchestrator.state.store import OrchestratorStore
from memex.orchestrator.turn.persona import load_personas
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.orchestrator.wire.servicer import OrchestratorServicer
from memex.shared.errors import NotFound
from memex.shared.interceptors import CallInterceptor
from memex.shared.server import EngineSlot


@dataclass
class Call:
    messages: list[ChatMessage]
    options: GenerateOptions


@dataclass
class ScriptedReasoner:
    """Replies by the system prompt's kind (plan, answer, chat...), in chunks; records every call."""

    replies: dict[str, list[str]]
    calls: list[Call] = field(default_factory=list)
    local: bool = True

    async def info(self) -> ReasonerInfo:
        return ReasonerInfo("stub", "scripted", 8192, self.local)

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        self.calls.append(Call(list(messages), options))
        system = messages[0].content
        kind = next((k for k in self.replies if k in system), "default")
        for chunk in self.replies.get(kind, ["ok"]):
            yield chunk
        usage.append(
            Usage(prompt_tokens=sum(len(m.content) for m in messages) // 4, completion_tokens=5)
        )


@dataclass
class FakeMemory:
    items: list[ShownItem]
    searches: list[SearchSpec] = field(default_factory=list)
    on_search: Callable[[SearchSpec], None] | None = None

    async def search(self, tenant: str, spec: SearchSpec) -> list[ShownItem]:
        self.searches.append(spec)
        if self.on_search:
            self.on_search(spec)
        dated = [i for i in self.items if (spec.since or "") <= i.date <= (spec.until or "9999")]
        return (dated if spec.since or spec.until else list(self.items))[: spec.k]

    async def query_records(
        self, tenant: str, collection: str, filters: object, sort: str, limit: int
    ) -> list[ShownItem]:
        return [i for i in self.items if i.ref.startswith(f"{collection}:")][:limit]

    async def person_timeline(self, tenant: str, entity_id: str, limit: int) -> list[ShownItem]:
        return [i for i in self.items if entity_id in i.text][:limit]

    async def list_inbox(self, tenant: str, limit: int) -> list[ShownItem]:
        return [i for i in self.items if i.ref.startswith("inbox:")][:limit]

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> ForgottenNote:
        raise NotFound(f"no note has the episode id, vault path or title {note!r}")

    # The surfaces' reads are tested against a real retrieval servicer (test_reads.py).

    async def records(
        self, tenant: str, collection: str, filters: object, sort: str, limit: int
    ) -> list[Record]:
        raise NotImplementedError

    async def timeline(self, tenant: str, entity_id: str, limit: int) -> Timeline:
        raise NotImplementedError

    async def inbox(self, tenant: str, limit: int, include_done: bool) -> list[Record]:
        raise NotImplementedError

    async def note(self, tenant: str, episode_id: str) -> Note:
        raise NotImplementedError

    async def note_file(
        self, tenant: str, episode_id: str
    ) -> AsyncGenerator[NoteFileHead | bytes, None]:
        raise NotImplementedError
        yield b""  # an async generator, as the port's is


NOTES = [
    ShownItem(
        item_id="c1",
        episode_id="ep-deposit",
        ref="[[Flat lease]]",
        title="Flat lease",
        path="home/Flat lease.md",
        date="2026-02-01",
        text="Agreed with Dana that the deposit is £800, returned in May.",
    ),
    ShownItem(
        item_id="c2",
        episode_id="ep-boiler",
        ref="[[Boiler]]",
        title="Boiler",
        date="2026-03-10",
        text="The boiler was fixed after three visits.",
    ),
    ShownItem(
        item_id="c3",
        episode_id="ep-therapy",
        ref="[[Therapy]]",
        title="Therapy",
        date="2026-03-12",
        text="Talked through the panic attacks.",
        sensitive=True,
    ),
    ShownItem(
        item_id="entities:dana",
        ref="entities:dana",
        kind="record",
        title="Dana Ruiz",
        text="Dana Ruiz, landlord.",
    ),
]


def make_orchestrator(
    tmp_path: Path,
    reasoner: ScriptedReasoner,
    memory: FakeMemory,
    *,
    prefill_tokens_per_second: float = 0.0,
    **settings: Any,
) -> Orchestrator:
    """The orchestrator as the service wires it, over a scripted model and a fake memory."""
    config = OrchestratorSettings(
        data_dir=tmp_path / "orchestrator", personas_dir=tmp_path / "personas", **settings
    )
    store = OrchestratorStore(config.state_location)  # state_url: PostgreSQL
    info = ReasonerInfo("stub", "scripted", 8192, reasoner.local, prefill_tokens_per_second)
    personas = load_personas(config.personas_dir)
    return build_orchestrator(config, store, memory, reasoner, info, personas)


@contextlib.asynccontextmanager
async def serving(orchestrator: Orchestrator) -> AsyncIterator[Any]:
    """The real orchestrator servicer over ``orchestrator``, on a real gRPC server on port 0
    behind memex's interceptor; yields a stub. Closes the orchestrator's store after."""
    slot: EngineSlot[Orchestrator] = EngineSlot("orchestrator")
    slot.set(orchestrator)
    server = grpc.aio.server(interceptors=[CallInterceptor()])
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(
        OrchestratorServicer(slot), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
    finally:
        await server.stop(None)
        orchestrator.store.close()


# What the ask tests script: the answer and plan prompts' kinds, a good numbered reply.
PLAN = "You plan how to look up"
ANSWER = "How to answer:"
GOOD = ["The deposit is £800 [", "1], returned in May [1]. Dana is the landlord [4][9]."]


def reasoner(reply: list[str] = GOOD, plan: Any = None, local: bool = True) -> ScriptedReasoner:
    replies = {ANSWER: reply}
    if plan is not None:
        replies[PLAN] = [plan if isinstance(plan, str) else json.dumps(plan)]
    return ScriptedReasoner(replies, local=local)


@dataclass
class TwoAnswers(ScriptedReasoner):
    """Answers the first answer call with one reply and every later one with another."""

    later: list[str] = field(default_factory=list)

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        if self.calls:
            self.replies = {ANSWER: self.later}
        async for piece in super().generate(messages, options, usage):
            yield piece


# Numbered sources, as a briefing shows them, for reading answers mechanically.
def source(number: int, text: str, title: str = "", **fields: object) -> Source:
    title = title or f"Note {number}"
    values: dict[str, object] = {
        "item_id": f"c{number}",
        "episode_id": f"ep{number}",
        "ref": f"[[{title}]]",
        "title": title,
        "text": text,
    }
    values.update(fields)
    item = ShownItem(**values)  # type: ignore[arg-type]
    return Source(number, item, text, tuple(segments(text)))


SOURCES = [
    source(1, "# Terms\n- Rent: **£48 per year**, due 1 January.\n- Key deposit: £10.", "Tenancy"),
    source(2, "Ron keeps the waiting list in a red notebook. He is the secretary.", "Ron"),
    source(3, "Sold six jars of jam for £3 each.", "Open day"),
]

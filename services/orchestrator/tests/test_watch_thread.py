"""Live turn state (issue 37): WatchThread on a real gRPC server, against each backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.ports import ChatMessage, GenerateOptions, Usage
from memex.orchestrator.queue import events as turn_events
from memex.orchestrator.queue.worker import ChatWorker
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.v1 import orchestrator_pb2 as pb

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator, serving

PLAN = "You plan how to look up"
ANSWER = "How to answer:"
REPLY = "The deposit is £800 [1]."
READ_SECONDS = 10.0


@dataclass
class GatedReasoner(ScriptedReasoner):
    """A scripted model that says nothing until ``gate`` is set, so a test sees the turn think."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        await self.gate.wait()
        async for chunk in super().generate(messages, options, usage):
            yield chunk


def orchestrator(
    data: Path, model: ScriptedReasoner, state: Path | str | None = None
) -> Orchestrator:
    url = state if isinstance(state, str) else None
    return make_orchestrator(
        data, model, FakeMemory(NOTES), worker_poll_seconds=0.05, worker_id="w1", state_url=url
    )


def seen(reply: pb.WatchThreadResponse) -> tuple[str, str, bool]:
    """A change as (role, state, current)."""
    role = pb.MessageRole.Name(reply.turn.role).removeprefix("MESSAGE_ROLE_").lower()
    state = pb.TurnState.Name(reply.turn.state).removeprefix("TURN_STATE_").lower()
    return role, state, reply.current


async def test_watch_sends_the_thread_then_each_change_as_a_worker_answers(
    tmp_path: Path, state: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The current turns first, then pending → thinking → answered and the assistant turn. On
    PostgreSQL the worker has its own engine (as its own process would), so only the NOTIFY
    can wake the watch: polling is put out of reach to prove it."""
    monkeypatch.setattr(turn_events, "POLL_SECONDS", 60.0)
    model = GatedReasoner(
        {PLAN: ['{"steps": [{"tool": "search_vault", "query": "deposit"}]}'], ANSWER: [REPLY]}
    )
    served = orchestrator(tmp_path / "served", model, state)
    worker_side = served if isinstance(state, Path) else orchestrator(tmp_path / "w", model, state)
    turn = await served.create_turn("me", "", "How much was the deposit?")
    worker = ChatWorker(worker_side, worker_side.settings)
    async with serving(served) as stub:
        running: asyncio.Task[None] | None = None
        try:
            call = stub.WatchThread(pb.WatchThreadRequest(tenant="me", thread_id=turn.thread_id))
            first = await asyncio.wait_for(call.read(), READ_SECONDS)
            assert seen(first) == ("user", "pending", True)
            assert first.turn.id == turn.id and first.turn.text == "How much was the deposit?"

            running = asyncio.create_task(worker.run())
            thinking = await asyncio.wait_for(call.read(), READ_SECONDS)
            assert seen(thinking) == ("user", "thinking", False)

            model.gate.set()
            answered = [await asyncio.wait_for(call.read(), READ_SECONDS) for _ in range(2)]
            assert [seen(r) for r in answered] == [
                ("user", "answered", False),
                ("assistant", "answered", False),
            ]
            assert answered[1].turn.text.startswith("The deposit is £800 [[Flat lease]].")
            assert answered[1].turn.reply_to == answered[0].turn.id  # the answer names its question

            # Deleting the thread ends the watch.
            await served.delete_thread("me", turn.thread_id)
            assert await asyncio.wait_for(call.read(), READ_SECONDS) is grpc.aio.EOF
        finally:
            # The worker stops before the store closes under it.
            worker.stopping.set()
            if running is not None:
                await asyncio.wait_for(running, READ_SECONDS)
            if worker_side is not served:
                worker_side.store.close()


async def test_watch_refuses_an_unknown_thread_and_an_empty_id(tmp_path: Path) -> None:
    served = orchestrator(tmp_path, ScriptedReasoner({}))
    async with serving(served) as stub:
        for thread_id, code, words in [
            ("nope", grpc.StatusCode.NOT_FOUND, "no thread 'nope'"),
            ("", grpc.StatusCode.INVALID_ARGUMENT, "thread_id is empty"),
        ]:
            call: Any = stub.WatchThread(pb.WatchThreadRequest(tenant="me", thread_id=thread_id))
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await asyncio.wait_for(call.read(), READ_SECONDS)
            assert caught.value.code() == code
            assert words in (caught.value.details() or "")


async def test_a_watcher_of_another_tenant_finds_no_thread(tmp_path: Path) -> None:
    served = orchestrator(tmp_path, ScriptedReasoner({}))
    turn = await served.create_turn("me", "", "Mine?")
    async with serving(served) as stub:
        call: Any = stub.WatchThread(pb.WatchThreadRequest(tenant="you", thread_id=turn.thread_id))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await asyncio.wait_for(call.read(), READ_SECONDS)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND

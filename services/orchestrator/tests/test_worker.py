"""The queued-turn worker (SPEC B13) with scripted stages."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memex.orchestrator.ask import Asker, AskResult
from memex.orchestrator.chat import Chatter
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.worker import ChatWorker

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_context

PLAN = "You plan how to look up"
ANSWER = 'Return JSON with "answer"'
REPLY = json.dumps(
    {
        "answer": "£800.",
        "citations": [{"episode": "ep-deposit", "quote": "deposit is £800", "support": "verbatim"}],
    }
)


def orchestrator(tmp_path: Path, model: ScriptedReasoner) -> Orchestrator:
    context = make_context(
        tmp_path, model, FakeMemory(NOTES), worker_poll_seconds=0.05, worker_id="w1"
    )
    return Orchestrator(context, Asker(context), Chatter(context))


async def run_until(worker: ChatWorker, done: int) -> None:
    task = asyncio.create_task(worker.run())
    for _ in range(200):
        if worker.answered >= done:
            break
        await asyncio.sleep(0.05)
    worker.stopping.set()
    await asyncio.wait_for(task, 10)


async def test_pending_turns_are_answered_in_order_with_thread_context(tmp_path: Path) -> None:
    model = ScriptedReasoner(
        {PLAN: ['{"steps": [{"tool": "search_vault", "query": "deposit"}]}'], ANSWER: [REPLY]}
    )
    o = orchestrator(tmp_path, model)
    first = await o.create_turn("me", "", "How much was the deposit?")
    await o.create_turn("me", first.thread_id, "When is it returned?")
    await run_until(ChatWorker(o, o.context.settings), 2)

    turns = o.context.store.list_turns("me", first.thread_id)
    assert [(t.role, t.state) for t in turns] == [
        ("user", "answered"),
        ("user", "answered"),
        ("assistant", "answered"),
        ("assistant", "answered"),
    ]
    assert turns[2].text == "£800." and turns[2].citations[0]["support"] == "verbatim"
    second_plan = model.calls[2].messages[-1].content
    assert (
        "Earlier in this conversation:\nuser: How much was the deposit?\nassistant: £800."
        in second_plan
    )
    assert second_plan.endswith("Now: When is it returned?")


async def test_a_failing_turn_is_marked_error_and_the_loop_goes_on(tmp_path: Path) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model)
    failing = await o.create_turn("me", "", "first")
    ok = await o.create_turn("me", "", "second")

    original = o.asker.ask
    calls = {"n": 0}

    async def flaky(
        tenant: str, question: str, persona_name: str = "", limit: int = 0
    ) -> AskResult:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("reasoner exploded " + "x" * 1000)
        return await original(tenant, question, persona_name, limit)

    o.asker.ask = flaky  # type: ignore[method-assign]
    await run_until(ChatWorker(o, o.context.settings), 1)
    failed = o.context.store.get_turn("me", failing.id)
    assert (
        failed.state == "error"
        and failed.error.startswith("RuntimeError: reasoner exploded")
        and len(failed.error) <= 500
    )
    assert o.context.store.get_turn("me", ok.id).state == "answered"


async def test_a_restarted_worker_takes_back_its_orphaned_turn_and_answers_it_once(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model)
    turn = await o.create_turn("me", "", "How much was the deposit?")
    claimed = o.context.store.claim_next("w1", 3600)  # as if w1 died mid-answer (kill -9)
    assert claimed is not None
    await run_until(ChatWorker(o, o.context.settings), 1)
    turns = o.context.store.list_turns("me", turn.thread_id)
    assert [(t.role, t.state) for t in turns] == [("user", "answered"), ("assistant", "answered")]

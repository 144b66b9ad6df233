"""The queued-turn worker (SPEC B13) with scripted stages."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import sqlite3
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from memex.cli.stack.services import stack_services
from memex.orchestrator.ask.events import AskResult
from memex.orchestrator.memory.policy import WITHHELD_READ, WITHHELD_REPLY
from memex.orchestrator.queue.turns import FORGOTTEN_THREAD, TURN_REQUEST
from memex.orchestrator.queue.worker import ChatWorker, WorkerService
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.state.store import OrchestratorStore, Turn
from memex.shared.errors import InvalidArgument, ResourceExhausted
from memex.shared.health import check
from memex.shared.stack_settings import StackSettings
from memex.testing import serving
from memex.testing.stack import private_stack_env

from .conftest import older_database
from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

PLAN = "You plan how to look up"
ANSWER = "How to answer:"
REPLY = "The deposit is £800 [1]."


def orchestrator(
    tmp_path: Path, model: ScriptedReasoner, state: Path | str | None = None
) -> Orchestrator:
    """The orchestrator a worker runs in; ``state`` (the ``state`` fixture) picks the backend."""
    url = state if isinstance(state, str) else None
    return make_orchestrator(
        tmp_path, model, FakeMemory(NOTES), worker_poll_seconds=0.05, worker_id="w1", state_url=url
    )


def hold_asks(o: Orchestrator, before: Callable[[], Awaitable[None]]) -> None:
    """Makes each ask of ``o`` await ``before()`` first (which may raise, or never return),
    then answer as it would have."""
    original = o.asker.ask

    async def held(
        tenant: str,
        question: str,
        persona_name: str = "",
        limit: int = 0,
        *,
        include_sensitive: bool = False,
        as_of: str = "",
    ) -> AskResult:
        await before()
        return await original(
            tenant, question, persona_name, limit, include_sensitive=include_sensitive, as_of=as_of
        )

    o.asker.ask = held  # type: ignore[method-assign]


def fail_first_ask(
    o: Orchestrator, error: Exception, cause: BaseException | None = None
) -> dict[str, int]:
    """Makes the orchestrator's first ask raise ``error`` (from ``cause``), later ones answer;
    returns the count of asks made."""
    calls = {"n": 0}

    async def first_fails() -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise error from cause

    hold_asks(o, first_fails)
    return calls


async def run_until(worker: ChatWorker, done: int) -> None:
    task = asyncio.create_task(worker.run())
    for _ in range(200):
        if worker.answered >= done:
            break
        await asyncio.sleep(0.05)
    worker.stopping.set()
    await asyncio.wait_for(task, 10)


async def test_pending_turns_are_answered_in_order_with_thread_context(
    tmp_path: Path, state: Path | str
) -> None:
    model = ScriptedReasoner(
        {PLAN: ['{"steps": [{"tool": "search_vault", "query": "deposit"}]}'], ANSWER: [REPLY]}
    )
    o = orchestrator(tmp_path, model, state)
    first = await o.create_turn("me", "", "How much was the deposit?", include_sensitive=True)
    await o.create_turn("me", first.thread_id, "When is it returned?", include_sensitive=True)
    await run_until(ChatWorker(o, o.settings), 2)

    turns = o.store.list_turns("me", first.thread_id)
    assert [(t.role, t.state) for t in turns] == [
        ("user", "answered"),
        ("user", "answered"),
        ("assistant", "answered"),
        ("assistant", "answered"),
    ]
    assert turns[2].text == "The deposit is £800 [[Flat lease]]."
    assert turns[2].citations[0]["support"] == "verbatim"
    second = model.calls[1].messages[-1].content
    assert (
        "Earlier in this conversation:\nuser: How much was the deposit?\n"
        "assistant: The deposit is £800 [[Flat lease]]." in second
    )
    assert "Now: When is it returned?" in second


async def test_a_queued_turn_withholds_sensitive_notes_unless_its_request_asked(
    tmp_path: Path,
) -> None:
    """The flag is stored with the turn (the worker answers later) and the worker honours it."""
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model)
    plain = await o.create_turn("me", "", "How much was the deposit?")
    asked = await o.create_turn("me", "", "How am I?", include_sensitive=True)
    assert (plain.include_sensitive, asked.include_sensitive) == (False, True)
    await run_until(ChatWorker(o, o.settings), 2)

    first, second = (c.messages[-1].content for c in model.calls)
    assert "panic" not in first and "panic" in second
    [_, plain_reply] = o.store.list_turns("me", plain.thread_id)
    assert plain_reply.text.endswith("_(1 sensitive source withheld from this answer.)_")
    [_, asked_reply] = o.store.list_turns("me", asked.thread_id)
    assert "withheld" not in asked_reply.text


async def test_a_queued_turn_asked_as_of_a_day_is_answered_from_that_day(
    tmp_path: Path, state: Path | str
) -> None:
    """The day is checked when the turn is queued, stored with it, and read by the worker."""
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model, state)
    with pytest.raises(InvalidArgument, match="YYYY-MM-DD"):
        await o.create_turn("me", "", "How much was the deposit?", as_of="May 1st")
    with pytest.raises(InvalidArgument, match="after today"):
        await o.create_turn("me", "", "How much was the deposit?", as_of="2999-01-01")
    then = await o.create_turn("me", "", "How much was the deposit?", as_of="2026-05-01")
    now = await o.create_turn("me", then.thread_id, "And now?")
    assert (then.as_of, now.as_of) == ("2026-05-01", "")
    assert o.store.get_turn("me", then.id).as_of == "2026-05-01"
    await run_until(ChatWorker(o, o.settings), 2)

    prompts = [c.messages[-1].content for c in model.calls if "Today is" in c.messages[-1].content]
    asked_then = [p for p in prompts if "Now: And now?" not in p]
    asked_now = [p for p in prompts if "Now: And now?" in p]
    assert asked_then and all("Today is Friday 1 May 2026." in p for p in asked_then)
    assert asked_now and not any("1 May 2026" in p for p in asked_now)


def test_a_turn_queued_before_turns_had_a_day_reads_the_memory_as_it_is(
    tmp_path: Path, state: Path | str
) -> None:
    engine = older_database(state, below=9)
    with engine.transaction() as db:
        db.execute("INSERT INTO threads VALUES ('th', 'me', 'Old', 'now')")
        db.execute(
            "INSERT INTO turns (id, thread_id, role, text, state, seq, created_at) "
            "VALUES ('old', 'th', 'user', 'a question', 'pending', 1, 'now')"
        )
    engine.close()
    store = OrchestratorStore(state)
    try:
        assert store.get_turn("me", "old").as_of == ""
    finally:
        store.close()


async def test_an_answer_that_could_see_sensitive_notes_is_not_history_for_a_turn_that_cannot(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: ["You talked through panic [3]."]})
    o = orchestrator(tmp_path, model)
    first = await o.create_turn("me", "", "How am I?", include_sensitive=True)
    await o.create_turn("me", first.thread_id, "And the deposit?")
    await run_until(ChatWorker(o, o.settings), 2)
    second = model.calls[1].messages[-1].content
    assert "How am I?" in second and WITHHELD_REPLY in second
    assert "talked through" not in second
    # Replayed, that answer is a placeholder unless the read asked for it.
    replay = await o.thread_turns("me", first.thread_id)
    answers = [t for t in replay if t.role == "assistant"]
    assert answers[0].withheld and answers[0].text == WITHHELD_READ
    assert not answers[1].withheld
    owner = await o.thread_turns("me", first.thread_id, include_sensitive=True)
    assert "talked through" in next(t for t in owner if t.role == "assistant").text


async def test_a_failing_turn_is_marked_error_and_the_loop_goes_on(
    tmp_path: Path, state: Path | str
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model, state)
    failing = await o.create_turn("me", "", "first")
    ok = await o.create_turn("me", "", "second")

    fail_first_ask(o, RuntimeError("reasoner exploded " + "x" * 1000))
    await run_until(ChatWorker(o, o.settings), 1)
    failed = o.store.get_turn("me", failing.id)
    assert (
        failed.state == "error"
        and failed.error.startswith("RuntimeError: reasoner exploded")
        and len(failed.error) <= 500
    )
    assert o.store.get_turn("me", ok.id).state == "answered"


async def test_a_full_disk_leaves_the_turn_queued_and_the_worker_running(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = make_orchestrator(
        tmp_path,
        model,
        FakeMemory(NOTES),
        worker_poll_seconds=0.05,
        worker_id="w1",
        worker_lease_seconds=0.3,
    )
    turn = await o.create_turn("me", "", "How much was the deposit?")
    no_space = OSError(errno.ENOSPC, "No space left on device")
    claim = o.store.claim_next
    failures = {"claim": 1}

    def full_claim(worker_id: str, lease_seconds: float) -> Turn | None:
        if failures["claim"]:
            failures["claim"] -= 1
            raise no_space
        return claim(worker_id, lease_seconds)

    o.store.claim_next = full_claim  # type: ignore[method-assign]
    asks = fail_first_ask(o, sqlite3.OperationalError("database or disk is full"), no_space)
    await run_until(ChatWorker(o, o.settings), 1)
    # Neither failure ended the loop or marked the turn failed: once its lease ran out it was
    # claimed again and answered.
    assert failures == {"claim": 0} and asks["n"] == 2
    assert o.store.get_turn("me", turn.id).state == "answered"


async def test_a_full_queue_refuses_a_new_turn_until_one_is_claimed(tmp_path: Path) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), max_pending_turns=2)
    await o.create_turn("me", "", "first")
    await o.create_turn("me", "", "second")
    with pytest.raises(ResourceExhausted, match="2 questions are already waiting"):
        await o.create_turn("me", "", "third")
    assert o.store.pending_turns().count == 2  # the refused turn was not stored
    o.store.claim_next("w1", lease_seconds=60)  # a worker took one: room for another
    await o.create_turn("me", "", "third")


async def test_a_restarted_worker_takes_back_its_orphaned_turn_and_answers_it_once(
    tmp_path: Path, state: Path | str
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model, state)
    turn = await o.create_turn("me", "", "How much was the deposit?", include_sensitive=True)
    claimed = o.store.claim_next("w1", 3600)  # as if w1 died mid-answer (kill -9)
    assert claimed is not None
    await run_until(ChatWorker(o, o.settings), 1)
    turns = o.store.list_turns("me", turn.thread_id)
    assert [(t.role, t.state) for t in turns] == [("user", "answered"), ("assistant", "answered")]


async def test_the_worker_process_reports_serving_while_its_loop_runs_and_counts_turns(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model)
    settings = o.settings.model_copy(update={"worker_port": 0, "worker_metrics_port": 0})

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[Orchestrator]:
        yield o

    before = REGISTRY.get_sample_value(
        "memex_orchestrator_worker_turns_total", {"outcome": "answered"}
    )
    served = WorkerService(settings, opened)
    async with serving(served.service) as running:
        assert await check(f"127.0.0.1:{running.port}") == "SERVING"
        turn = await o.create_turn("me", "", "How much was the deposit?", include_sensitive=True)
        for _ in range(200):
            if o.store.get_turn("me", turn.id).state == "answered":
                break
            await asyncio.sleep(0.05)
        assert o.store.get_turn("me", turn.id).state == "answered"
        assert running.metrics_port
        url = f"http://127.0.0.1:{running.metrics_port}/metrics"
        scraped = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
        assert 'memex_orchestrator_worker_turns_total{outcome="answered"}' in scraped
    after = REGISTRY.get_sample_value(
        "memex_orchestrator_worker_turns_total", {"outcome": "answered"}
    )
    assert (after or 0) - (before or 0) == 1
    assert not served.failed


async def test_a_worker_whose_loop_dies_stops_serving_and_says_it_failed(tmp_path: Path) -> None:
    o = orchestrator(tmp_path, ScriptedReasoner({}))
    settings = o.settings.model_copy(update={"worker_port": 0})

    def broken(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    o.store.requeue_worker = broken  # type: ignore[method-assign, assignment]

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[Orchestrator]:
        yield o

    served = WorkerService(settings, opened)
    # The loop dies at once, which stops the service: run() returns by itself.
    await asyncio.wait_for(served.service.run(handle_signals=False), 30)
    assert served.failed


def test_memex_up_runs_the_worker_after_the_orchestrator_on_its_own_ports(tmp_path: Path) -> None:
    settings = StackSettings(data_dir=tmp_path)
    services = stack_services(settings)
    names = [s.name for s in services]
    at = names.index("orchestrator")
    orchestrator, worker = services[at : at + 2]
    assert worker.module == "memex.orchestrator.queue.worker"
    assert worker.address == "127.0.0.1:50055"
    assert worker.env["MEMEX_ORCHESTRATOR_WORKER_PORT"] == "50055"
    assert worker.env["MEMEX_ORCHESTRATOR_WORKER_METRICS_PORT"] == "9155"
    # The same state and stages as the orchestrator it works for.
    for key in ("DATA_DIR", "RETRIEVAL_ADDR", "REASONER_ADDR", "PERSONAS_DIR"):
        assert (
            worker.env[f"MEMEX_ORCHESTRATOR_{key}"] == orchestrator.env[f"MEMEX_ORCHESTRATOR_{key}"]
        )
    env = private_stack_env(tmp_path)
    assert env["MEMEX_WORKER_PORT"] != "50055" and env["MEMEX_WORKER_METRICS_PORT"] != "9155"


async def test_a_worker_stopped_mid_answer_puts_the_turn_back_to_pending(
    tmp_path: Path, state: Path | str
) -> None:
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model, state)
    turn = await o.create_turn("me", "", "How much was the deposit?", include_sensitive=True)
    thinking = asyncio.Event()

    async def slow() -> None:
        thinking.set()
        await asyncio.sleep(3600)
        raise AssertionError("never reached")

    hold_asks(o, slow)
    worker = ChatWorker(o, o.settings)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(thinking.wait(), 10)
    assert o.store.get_turn("me", turn.id).state == "thinking"
    worker.stopping.set()  # what SIGTERM does
    await asyncio.wait_for(task, 10)
    assert o.store.get_turn("me", turn.id).state == "pending"
    assert [t.role for t in o.store.list_turns("me", turn.thread_id)] == ["user"]


def _traces(o: Orchestrator, turn_id: str, question: str) -> tuple[int, int, list[str]]:
    """What answering ``turn_id`` left: telemetry turns asking ``question``, evidence bundles,
    and the prompts of the model calls made for the turn."""
    asked = o.store.query(
        "SELECT COUNT(*) AS n FROM telemetry_turns WHERE query LIKE ?", f"%{question}%"
    )[0]["n"]
    bundles = o.store.query("SELECT COUNT(*) AS n FROM evidence")[0]["n"]
    prompts = [
        r["prompt"]
        for r in o.store.query(
            "SELECT prompt FROM llm_log WHERE request_id = ?", f"{TURN_REQUEST}{turn_id}"
        )
    ]
    return asked, bundles, prompts


FORGOTTEN_QUESTION = "How much was the deposit on the flat?"


async def queued(tmp_path: Path, state: Path | str) -> tuple[Orchestrator, Turn]:
    """An orchestrator with one queued turn asking ``FORGOTTEN_QUESTION``, not yet answered."""
    model = ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: [REPLY]})
    o = orchestrator(tmp_path, model, state)
    turn = await o.create_turn("me", "", FORGOTTEN_QUESTION, include_sensitive=True)
    return o, turn


async def test_forgetting_a_thread_erases_what_answering_its_turns_left(
    tmp_path: Path, state: Path | str
) -> None:
    o, turn = await queued(tmp_path, state)
    await run_until(ChatWorker(o, o.settings), 1)
    asked, bundles, prompts = _traces(o, turn.id, FORGOTTEN_QUESTION)
    assert asked == 1 and bundles == 1 and prompts and all(FORGOTTEN_QUESTION in p for p in prompts)

    await o.delete_thread("me", turn.thread_id)
    asked, bundles, prompts = _traces(o, turn.id, FORGOTTEN_QUESTION)
    assert (asked, bundles) == (0, 0)
    assert prompts and set(prompts) == {FORGOTTEN_THREAD}  # the calls were made: rows stay


async def test_a_thread_forgotten_while_its_turn_is_answered_keeps_nothing_of_the_answer(
    tmp_path: Path, state: Path | str
) -> None:
    o, turn = await queued(tmp_path, state)
    thinking, release = asyncio.Event(), asyncio.Event()

    async def until_released() -> None:
        thinking.set()
        await release.wait()

    hold_asks(o, until_released)
    worker = ChatWorker(o, o.settings)
    lost = (
        REGISTRY.get_sample_value("memex_orchestrator_worker_turns_total", {"outcome": "lost"}) or 0
    )
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(thinking.wait(), 10)
    await o.delete_thread("me", turn.thread_id)
    release.set()
    for _ in range(200):
        if (
            REGISTRY.get_sample_value("memex_orchestrator_worker_turns_total", {"outcome": "lost"})
            or 0
        ) > lost:
            break
        await asyncio.sleep(0.05)
    worker.stopping.set()
    await asyncio.wait_for(task, 10)

    assert worker.answered == 0
    asked, bundles, prompts = _traces(o, turn.id, FORGOTTEN_QUESTION)
    assert (asked, bundles) == (0, 0)
    assert prompts and set(prompts) == {FORGOTTEN_THREAD}

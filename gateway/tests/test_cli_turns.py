"""`memex turn` and `memex threads` against a real in-process gRPC server on port 0 whose servicer
is a fake queue: a turn followed on WatchThread to its answer, an error, a deleted thread, a lost
orchestrator, Ctrl-C; the listings; and their exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc

from .support.cli_harness import CITATIONS, memex

STAMP = "2026-05-01T10:00:00Z"


class Queue(orchestrator_pb2_grpc.OrchestratorServiceServicer):
    """Threads and turns in memory; WatchThread plays a worker by the question's text: ``fail``
    ends in error, ``forget me`` has its thread deleted mid-follow, ``wait`` is never answered,
    ``flaky`` loses its first watch (UNAVAILABLE); anything else is answered with citations."""

    def __init__(self) -> None:
        self.threads: dict[str, pb.Thread] = {}
        self.turns: list[pb.Turn] = []
        self.created: list[pb.CreateTurnRequest] = []
        self.watches: list[pb.WatchThreadRequest] = []

    def _of(self, thread_id: str) -> list[pb.Turn]:
        return [t for t in self.turns if t.thread_id == thread_id]

    def _put(self, turn: pb.Turn) -> pb.Turn:
        for i, t in enumerate(self.turns):
            if t.id == turn.id:
                self.turns[i] = turn
                return turn
        self.turns.append(turn)
        return turn

    async def CreateTurn(self, request: Any, context: Any) -> pb.CreateTurnResponse:
        self.created.append(request)
        if not request.text.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "text is empty")
        if request.as_of == "2999-01-01":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "as_of is after today")
        thread_id = request.thread_id
        if thread_id and thread_id not in self.threads:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no thread {thread_id!r}")
        if not thread_id:
            thread_id = f"th-{len(self.threads) + 1}"
            self.threads[thread_id] = pb.Thread(id=thread_id, title=request.text, created_at=STAMP)
        turn = pb.Turn(
            id=f"t-{len(self.turns) + 1}", thread_id=thread_id, role=pb.MESSAGE_ROLE_USER,
            text=request.text, state=pb.TURN_STATE_PENDING, created_at=STAMP, as_of=request.as_of,
        )  # fmt: skip
        return pb.CreateTurnResponse(turn=self._put(turn))

    async def WatchThread(
        self, request: Any, context: Any
    ) -> AsyncIterator[pb.WatchThreadResponse]:
        self.watches.append(request)
        if request.thread_id not in self.threads:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no thread {request.thread_id!r}")
        for turn in self._of(request.thread_id):
            yield pb.WatchThreadResponse(turn=turn, current=True)
        pending = [t for t in self._of(request.thread_id) if t.state == pb.TURN_STATE_PENDING]
        for question in pending:
            if question.text == "flaky" and len(self.watches) == 1:
                await context.abort(grpc.StatusCode.UNAVAILABLE, "the orchestrator restarted")
            if question.text == "wait":
                await asyncio.Event().wait()  # until the client goes away
            thinking = self._put(pb.Turn(**_fields(question), state=pb.TURN_STATE_THINKING))
            yield pb.WatchThreadResponse(turn=thinking)
            if question.text == "forget me":
                del self.threads[request.thread_id]
                return  # the stream ends when the thread is deleted
            if question.text == "fail":
                failed = pb.Turn(**_fields(question), state=pb.TURN_STATE_ERROR, error="no model")
                yield pb.WatchThreadResponse(turn=self._put(failed))
                continue
            answered = self._put(pb.Turn(**_fields(question), state=pb.TURN_STATE_ANSWERED))
            answer = pb.Turn(
                id=f"t-{len(self.turns) + 1}", thread_id=question.thread_id,
                role=pb.MESSAGE_ROLE_ASSISTANT, text=f"About {question.text}: £1,030.",
                citations=CITATIONS, state=pb.TURN_STATE_ANSWERED, created_at=STAMP,
                reply_to=question.id,
            )  # fmt: skip
            self._put(answer)
            yield pb.WatchThreadResponse(turn=answered)
            yield pb.WatchThreadResponse(turn=answer)
        await asyncio.Event().wait()  # nothing more changes until the client goes away

    async def ListThreads(self, request: Any, context: Any) -> pb.ListThreadsResponse:
        return pb.ListThreadsResponse(threads=list(self.threads.values())[: request.limit])

    async def ListTurns(self, request: Any, context: Any) -> pb.ListTurnsResponse:
        if request.thread_id not in self.threads:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no thread {request.thread_id!r}")
        return pb.ListTurnsResponse(turns=self._of(request.thread_id))


def _fields(turn: pb.Turn) -> dict[str, Any]:
    keep = ("id", "thread_id", "role", "text", "created_at", "as_of")
    return {name: getattr(turn, name) for name in keep}


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[tuple[dict[str, str], Queue]]:
    servicer = Queue()  # type: ignore[abstract]  # the rest answer UNIMPLEMENTED
    server = grpc.aio.server()
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), "MEMEX_ORCHESTRATOR_PORT": str(port)}
    try:
        yield env, servicer
    finally:
        await server.stop(None)


async def test_a_turn_is_followed_to_its_answer_then_listed(queue: Any) -> None:
    env, servicer = queue
    code, out, err = await memex(env, "turn", "the deposit", "--as-of", "2026-02-01")
    assert code == 0, err
    assert err.splitlines()[:3] == [
        "queued turn t-1 in thread th-1: pending",
        "thinking",
        "answered",
    ]
    assert out.startswith("As of 2026-02-01:\nAbout the deposit: £1,030.\n\nSources:\n")
    assert '[1] [[Flat Deposit]] (verbatim) "£1,030"' in out
    assert "memex turn --thread th-1" in err and "memex evidence t-2" in err
    assert servicer.created[0].as_of == "2026-02-01" and not servicer.watches[0].include_sensitive

    # A second question in the same thread gets its own answer, not the first one's.
    code, out, _ = await memex(env, "turn", "the boiler", "--thread", "th-1", "--json")
    assert code == 0
    reply = json.loads(out)
    assert reply["turn"]["state"] == "answered" and reply["turn"]["thread_id"] == "th-1"
    assert reply["answer"]["text"] == "About the boiler: £1,030."
    assert reply["answer"]["citations"][0]["support_label"] == "verbatim"

    code, out, _ = await memex(env, "threads")
    assert code == 0 and out.startswith("th-1  2026-05-01T10:00  the deposit")
    code, out, _ = await memex(env, "threads", "--json")
    assert json.loads(out) == {"threads": [{"id": "th-1", "title": "the deposit",
                                            "created_at": STAMP}]}  # fmt: skip
    code, out, _ = await memex(env, "threads", "th-1")
    assert code == 0
    assert "you> the deposit  [answered, as of 2026-02-01]  (t-1)" in out
    assert "memex> About the boiler: £1,030.  (t-4)" in out and "(verbatim)" in out
    code, out, _ = await memex(env, "threads", "th-1", "--json")
    assert [t["role"] for t in json.loads(out)["turns"]] == ["user", "assistant"] * 2


async def test_no_wait_prints_the_ids_and_does_not_follow(queue: Any) -> None:
    env, servicer = queue
    code, out, _ = await memex(env, "turn", "later", "--no-wait", "--include-sensitive")
    assert (code, out) == (0, "turn t-1 in thread th-1\n")
    code, out, _ = await memex(env, "turn", "later", "--no-wait", "--json")
    assert code == 0 and json.loads(out)["turn"]["state"] == "pending"
    assert servicer.watches == [] and servicer.created[0].include_sensitive


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [
        (["turn", "  "], 2, "ask a question"),
        (["turn", "q", "--thread", " "], 2, "--thread is empty"),
        (["turn", "q", "--thread", "nope"], 4, "no thread 'nope' (`memex threads` lists them)"),
        (["turn", "q", "--as-of", "2999-01-01"], 2, "INVALID_ARGUMENT: as_of is after today"),
        (["turn", "fail"], 1, "the worker could not answer: no model"),
        (["turn", "forget me"], 4, "thread th-1 was forgotten while memex followed it"),
        (["threads", "nope"], 4, "no thread 'nope'"),
        (["threads", "--limit", "0"], 2, "--limit"),
    ],
)
async def test_bad_input_and_failures_say_why_and_set_the_exit_code(
    queue: Any, args: list[str], exit_code: int, message: str
) -> None:
    env, _ = queue
    code, _, err = await memex(env, *args)
    assert code == exit_code, err
    assert message in err and "Traceback" not in err


async def test_a_lost_watch_is_opened_again(queue: Any) -> None:
    env, servicer = queue
    code, out, err = await memex(env, "turn", "flaky")
    assert code == 0, err
    assert "following again" in err and "About flaky" in out
    assert len(servicer.watches) == 2


async def test_ctrl_c_stops_following_and_leaves_the_turn_queued(queue: Any) -> None:
    env, _ = queue
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.cli", "turn", "wait", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    first = await asyncio.wait_for(process.stderr.readline(), 60)
    assert first.startswith(b"queued turn t-1 in thread th-1")
    process.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 130
    assert "stopped following; turn t-1 stays queued in thread th-1" in err.decode()

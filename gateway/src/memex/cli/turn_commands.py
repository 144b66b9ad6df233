"""`memex turn` and `memex threads`: queued turns (SPEC B13) from the terminal.

`turn` queues a question for the chat worker and follows it on the thread's change stream
(``WatchThread``, issue 37: pushed, never polled), printing each state change on stderr and the
answer with its sources on stdout; Ctrl-C stops following and leaves the turn queued. `threads`
lists threads, or shows one with its turns. Forgetting one is `memex forget thread ID`
(forget_command.py), with its receipt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from memex.cli import options, rpc
from memex.cli.ask_commands import as_of_heading, render_citations
from memex.gateway import convert
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.errors import InvalidArgument, NotFound
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub

STATES = {
    pb.TURN_STATE_PENDING: "pending",
    pb.TURN_STATE_THINKING: "thinking",
    pb.TURN_STATE_ANSWERED: "answered",
    pb.TURN_STATE_ERROR: "error",
}
# A watch lost to an orchestrator restart (the supervisor restarts it in seconds) is opened again
# this many times, this far apart, before the command gives up; the turn is safe in the queue.
REWATCH_TRIES = 10
REWATCH_SECONDS = 1.0
# Every call has a deadline (memex.shared.client); a watch's is long: following a turn lasts as
# long as the worker takes, and Ctrl-C stops it sooner.
FOLLOW_SECONDS = 24 * 3600.0


def add_parsers(commands: Any) -> None:
    """Registers `turn` and `threads` on the CLI's subparsers."""
    turn = commands.add_parser(
        "turn",
        help="queue a question for the chat worker and follow it until it is answered",
        description="Queues a question (a turn) in a new thread, or in --thread, for the chat "
        "worker, then follows the thread as it changes: pending, thinking, answered or error on "
        "stderr, the answer and its sources on stdout. Ctrl-C stops following; the turn stays "
        "queued and `memex threads THREAD_ID` shows its answer later.",
    )
    turn.add_argument("question")
    turn.add_argument("--thread", default=None, help="queue it in this thread (default: a new one)")
    turn.add_argument(
        "--no-wait", action="store_true", help="print the turn and thread ids and return"
    )
    turn.add_argument("--json", action="store_true", help="the question and its answer as JSON")
    options.answer(turn, "answer")
    turn.set_defaults(run=run_turn)

    threads = commands.add_parser(
        "threads",
        help="list queued-chat threads, or show one with its turns",
        description="Without an id: threads, newest first. With one: its questions with their "
        "state and its answers with their sources, oldest first. `memex forget thread ID` "
        "forgets one.",
    )
    threads.add_argument("id", nargs="?", default="", help="a thread to show")
    threads.add_argument("--limit", type=int, default=50, help="threads listed at most")
    threads.add_argument("--json", action="store_true", help="machine-readable output")
    threads.add_argument(
        "--include-sensitive",
        action="store_true",
        help="show answers that drew on sensitive notes (placeholders unless asked)",
    )
    options.tenant(threads)
    threads.set_defaults(run=run_threads)


def _call(settings: StackSettings, work: Callable[[Stub], Any]) -> Any:
    return rpc.call(settings.orchestrator_addr, orchestrator_pb2_grpc.OrchestratorServiceStub, work)


def _state(turn: pb.Turn) -> str:
    return STATES.get(turn.state, "unknown")


def _as_json(turn: pb.Turn | None) -> dict[str, Any] | None:
    """A turn as the HTTP API shows it (GET /v1/turns/{id})."""
    return None if turn is None else convert.turn(turn).model_dump()


@dataclass
class Following:
    """What following one queued turn has seen: the question as it changes, and its answer
    (the assistant turn whose ``reply_to`` names it)."""

    question: pb.Turn
    answer: pb.Turn | None = None
    deleted: bool = False

    def see(self, turn: pb.Turn) -> str | None:
        """Takes one turn of the watch; returns the question's new state when it changed."""
        if turn.id == self.question.id:
            changed = turn.state != self.question.state
            self.question = turn
            return _state(turn) if changed else None
        if _is_answer(turn) and turn.reply_to == self.question.id:
            self.answer = turn
        return None

    @property
    def settled(self) -> bool:
        """Answered with its answer in hand, or failed."""
        return self.answer is not None or self.question.state == pb.TURN_STATE_ERROR


def _is_answer(turn: pb.Turn) -> bool:
    return turn.role == pb.MESSAGE_ROLE_ASSISTANT


async def _follow(stub: Stub, following: Following, request: pb.WatchThreadRequest) -> None:
    """Watches the thread until the question is settled or the thread is deleted; says each
    state change on stderr. A watch cut by an orchestrator restart is opened again."""
    tries = 0
    while True:
        watching = stub.WatchThread(request, timeout=FOLLOW_SECONDS)
        try:
            async for event in watching:
                tries = 0
                state = following.see(event.turn)
                if state == "pending":
                    print("pending again (its worker stopped; another takes it)", file=sys.stderr)
                elif state is not None:
                    print(state, file=sys.stderr, flush=True)
                if following.settled:
                    watching.cancel()
                    return
            following.deleted = True  # the stream ends cleanly only when the thread is deleted
            return
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE or tries >= REWATCH_TRIES:
                raise
            tries += 1
            print("(lost the orchestrator; following again)", file=sys.stderr, flush=True)
            await asyncio.sleep(REWATCH_SECONDS)


def run_turn(args: argparse.Namespace, settings: StackSettings) -> int:
    """Queues a question and, unless --no-wait, follows it to its answer."""
    question = args.question.strip()
    if not question:
        print("error: ask a question, e.g. memex turn 'when did I move?'", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    if args.thread is not None and not args.thread.strip():
        print("error: --thread is empty: give a thread id (`memex threads` lists them)",
              file=sys.stderr)  # fmt: skip
        return rpc.EXIT_BAD_INPUT
    thread = (args.thread or "").strip()
    create = pb.CreateTurnRequest(
        tenant=args.tenant,
        thread_id=thread,
        text=question,
        include_sensitive=args.include_sensitive,
        as_of=args.as_of.strip(),
    )
    queued: list[pb.Turn] = []  # what CreateTurn answered, for the messages after a Ctrl-C
    following: list[Following] = []

    async def work(stub: Stub) -> None:
        try:
            reply = await stub.CreateTurn(create)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND and thread:
                raise NotFound(f"no thread {thread!r} (`memex threads` lists them)") from None
            raise
        turn = reply.turn
        queued.append(turn)
        if args.no_wait:
            return
        print(f"queued turn {turn.id} in thread {turn.thread_id}: {_state(turn)}",
              file=sys.stderr, flush=True)  # fmt: skip
        following.append(Following(turn))
        watch = pb.WatchThreadRequest(
            tenant=args.tenant, thread_id=turn.thread_id, include_sensitive=args.include_sensitive
        )
        await _follow(stub, following[0], watch)

    result = _call(settings, work)
    if isinstance(result, int):  # failed or interrupted: say where the turn is, if queued
        if queued:
            turn = queued[0]
            stopped = "stopped following" if result == rpc.EXIT_INTERRUPTED else "lost it"
            print(
                f"({stopped}; turn {turn.id} stays queued in thread {turn.thread_id} and will be "
                f"answered: `memex threads {turn.thread_id}` shows it)",
                file=sys.stderr,
            )
        elif result == rpc.EXIT_INTERRUPTED:
            print("(interrupted; `memex threads` shows whether it was queued)", file=sys.stderr)
        return result
    turn = queued[0]
    if args.no_wait:
        if args.json:
            print(json.dumps({"turn": _as_json(turn)}, indent=2, ensure_ascii=False))
        else:
            print(f"turn {turn.id} in thread {turn.thread_id}")
            print(f"(its answer, once written: memex threads {turn.thread_id})", file=sys.stderr)
        return rpc.EXIT_OK
    return _settle(args, following[0])


def _settle(args: argparse.Namespace, f: Following) -> int:
    """Prints what following ended with; the exit code."""
    thread = f.question.thread_id
    if args.json:
        print(
            json.dumps(
                {"turn": _as_json(f.question), "answer": _as_json(f.answer)},
                indent=2,
                ensure_ascii=False,
            )
        )
    if f.deleted and not f.settled:
        print(f"error: thread {thread} was forgotten while memex followed it; its turns went "
              "with it", file=sys.stderr)  # fmt: skip
        return rpc.EXIT_NOT_FOUND
    if f.question.state == pb.TURN_STATE_ERROR:
        print(f"error: the worker could not answer: {f.question.error or 'no reason given'}",
              file=sys.stderr)  # fmt: skip
        print(f"(ask again: memex turn --thread {thread} '...')", file=sys.stderr)
        return rpc.EXIT_FAILED
    answer = f.answer
    assert answer is not None  # settled, not failed
    if not args.json:
        if heading := as_of_heading(f.question.as_of):
            print(heading)
        print(answer.text)
        if answer.citations:
            print("\nSources:\n" + render_citations(answer.citations))
        if answer.withheld and not args.include_sensitive:
            print("(it drew on sensitive notes: --include-sensitive shows it)")
    print(f"(continue with: memex turn --thread {thread} '...'; evidence: memex evidence "
          f"{answer.id})", file=sys.stderr)  # fmt: skip
    return rpc.EXIT_OK


def run_threads(args: argparse.Namespace, settings: StackSettings) -> int:
    """Lists threads, or shows one with its turns."""
    if args.id:
        return _show_thread(args, settings)
    if args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    request = pb.ListThreadsRequest(tenant=args.tenant, limit=args.limit)
    listed = _call(settings, lambda s: s.ListThreads(request))
    if isinstance(listed, int):
        return listed
    if args.json:
        threads = [convert.thread(t).model_dump() for t in listed.threads]
        print(json.dumps({"threads": threads}, indent=2, ensure_ascii=False))
        return rpc.EXIT_OK
    for t in listed.threads:
        print(f"{t.id}  {t.created_at[:16]}  {t.title}")
    if not listed.threads:
        print("no threads yet; queue a question with `memex turn '...'`")
    return rpc.EXIT_OK


def _show_thread(args: argparse.Namespace, settings: StackSettings) -> int:
    thread = args.id.strip()
    if not thread:
        print("error: the thread id is empty (`memex threads` lists them)", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    request = pb.ListTurnsRequest(
        tenant=args.tenant, thread_id=thread, include_sensitive=args.include_sensitive
    )

    async def work(stub: Stub) -> pb.ListTurnsResponse:
        try:
            return await stub.ListTurns(request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                raise NotFound(f"no thread {thread!r} (`memex threads` lists them)") from None
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise InvalidArgument(exc.details() or "bad thread id") from None
            raise

    listed = _call(settings, work)
    if isinstance(listed, int):
        return listed
    if args.json:
        turns = [_as_json(t) for t in listed.turns]
        print(json.dumps({"turns": turns}, indent=2, ensure_ascii=False))
        return rpc.EXIT_OK
    print(f"# thread {thread}")
    for t in listed.turns:
        if t.role == pb.MESSAGE_ROLE_USER:
            as_of = f", as of {t.as_of}" if t.as_of else ""
            error = f": {t.error}" if t.state == pb.TURN_STATE_ERROR and t.error else ""
            print(f"\nyou> {t.text}  [{_state(t)}{as_of}{error}]  ({t.id})")
        else:
            print(f"memex> {t.text}  ({t.id})")
            if t.citations:
                print(render_citations(t.citations))
    return rpc.EXIT_OK

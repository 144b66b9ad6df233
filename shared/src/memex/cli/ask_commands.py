"""`memex ask`, `chat`, `conversations` and `forget`: talk to the running orchestrator."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from google.protobuf import json_format

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.stack import StackSettings

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_NOT_RUNNING, EXIT_NOT_FOUND = 1, 2, 3, 4
SUPPORT_LABELS = {
    common_pb2.SUPPORT_VERBATIM: "verbatim",
    common_pb2.SUPPORT_PARAPHRASE: "paraphrase",
    common_pb2.SUPPORT_INFERENCE: "reading between the lines",
}
T = TypeVar("T")
if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub


def render_citations(citations: Sequence[common_pb2.Citation]) -> str:
    """One line per citation: the reference, its support label, and the quote."""
    lines = []
    for number, c in enumerate(citations, start=1):
        quote = f' "{c.quote}"' if c.quote else ""
        lines.append(f"  [{number}] {c.ref} ({SUPPORT_LABELS.get(c.support, 'unchecked')}){quote}")
    return "\n".join(lines)


def _run(settings: StackSettings, work: Callable[[Stub], Awaitable[T]]) -> T | int:
    """Runs ``work`` against the orchestrator; maps failures to a message and an exit code."""

    async def go() -> T:
        async with open_channel(settings.orchestrator_addr, default_timeout=600) as channel:
            return await work(orchestrator_pb2_grpc.OrchestratorServiceStub(channel))

    try:
        return asyncio.run(go())
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            print(
                f"memex is not reachable at {settings.orchestrator_addr}: start it with "
                "`memex up` (or `make up`)",
                file=sys.stderr,
            )
            return EXIT_NOT_RUNNING
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            return EXIT_NOT_FOUND
        return EXIT_BAD_INPUT if exc.code() == grpc.StatusCode.INVALID_ARGUMENT else EXIT_FAILED
    except KeyboardInterrupt:
        return 130


def _dump(message: Any) -> None:
    print(
        json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True), indent=2)
    )


def ask(args: argparse.Namespace, settings: StackSettings) -> int:
    """One cited answer."""
    request = pb.AskRequest(question=args.question, persona=args.persona, limit=args.limit)
    reply = _run(settings, lambda stub: stub.Ask(request))
    if isinstance(reply, int):
        return reply
    if args.json:
        _dump(reply)
        return 0
    print(reply.answer)
    if reply.citations:
        print("\nSources:\n" + render_citations(reply.citations))
    print(
        f"\n— {reply.persona}, {reply.model}, {reply.latency_ms / 1000:.1f}s"
        f"{', abstained' if reply.abstained else ''}",
        file=sys.stderr,
    )
    return 0


async def _chat_turn(stub: Stub, conversation: str, message: str, persona: str) -> str:
    citations: list[common_pb2.Citation] = []
    async for event in stub.Chat(
        pb.ChatRequest(conversation_id=conversation, message=message, persona=persona)
    ):
        kind = event.WhichOneof("event")
        if kind == "meta":
            conversation = event.meta.conversation_id
        elif kind == "delta":
            print(event.delta, end="", flush=True)
        elif kind == "citations":
            citations = list(event.citations.citations)
        elif kind == "error":
            print(f"\n[error: {event.error.code}: {event.error.message}]", file=sys.stderr)
    print()
    if citations:
        print("Sources:\n" + render_citations(citations))
    return conversation


def chat(args: argparse.Namespace, settings: StackSettings) -> int:
    """An interactive chat that streams replies; one message per line; /exit or Ctrl-D ends it."""
    interactive = sys.stdin.isatty()

    async def session(stub: Stub) -> int:
        conversation = args.conversation
        if args.message:
            await _chat_turn(stub, conversation, args.message, args.persona)
            return 0
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line or line.strip() in ("/exit", "/quit"):
                return 0
            if line.strip():
                conversation = await _chat_turn(stub, conversation, line.strip(), args.persona)

    result = _run(settings, session)
    return result if isinstance(result, int) else 0


def conversations(args: argparse.Namespace, settings: StackSettings) -> int:
    """Lists conversations, or replays one."""
    if args.id:
        reply = _run(
            settings,
            lambda s: s.GetConversation(pb.GetConversationRequest(conversation_id=args.id)),
        )
        if isinstance(reply, int):
            return reply
        if args.json:
            _dump(reply)
            return 0
        print(f"# {reply.conversation.title}  ({reply.conversation.persona})")
        for m in reply.messages:
            who = "you" if m.role == pb.MESSAGE_ROLE_USER else "memex"
            print(f"\n{who}> {m.text}")
            if m.citations:
                print(render_citations(m.citations))
        return 0
    listed = _run(
        settings, lambda s: s.ListConversations(pb.ListConversationsRequest(limit=args.limit))
    )
    if isinstance(listed, int):
        return listed
    if args.json:
        _dump(listed)
        return 0
    for c in listed.conversations:
        print(f"{c.id}  {c.updated_at[:16]}  {c.message_count:>3} msgs  {c.title}")
    if not listed.conversations:
        print("no conversations yet; start one with `memex chat`")
    return 0


def forget(args: argparse.Namespace, settings: StackSettings) -> int:
    """Deletes a conversation with its messages."""
    reply = _run(
        settings,
        lambda s: s.DeleteConversation(pb.DeleteConversationRequest(conversation_id=args.id)),
    )
    if isinstance(reply, int):
        return reply
    print(f"forgot conversation {args.id}")
    return 0

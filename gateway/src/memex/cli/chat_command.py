"""`memex chat`: one message, or an interactive session that streams cited replies."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc

from memex.cli import rpc
from memex.cli.ask_commands import as_of_heading, render_citations, run
from memex.cli.progress import Spinner
from memex.common.v1 import common_pb2
from memex.gateway.present import citations
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:
    from memex.cli.ask_commands import Stub

HELP = "Ask anything. /new starts a new conversation, /exit (or Ctrl-D) ends."


@dataclass
class Turn:
    """What one chat turn produced."""

    conversation_id: str
    reply: str = ""
    citations: list[common_pb2.Citation] = field(default_factory=list)
    withheld: int = 0
    message_id: str = ""
    error: str = ""
    error_code: str = ""
    as_of: str = ""  # the day whose memory the reply read; "" for now

    def as_json(self) -> dict[str, Any]:
        """The turn as one JSON object (``--json``)."""
        return {
            "conversation_id": self.conversation_id,
            "reply": self.reply,
            "citations": [c.model_dump() for c in citations(self.citations)],
            "withheld": self.withheld,
            "message_id": self.message_id,
            **({"as_of": self.as_of} if self.as_of else {}),
            **({"error": self.error, "error_code": self.error_code} if self.error else {}),
        }


async def chat_turn(
    stub: Stub,
    conversation: str,
    message: str,
    persona: str,
    *,
    stream: bool,
    prefix: str = "",
    include_sensitive: bool = False,
    as_of: str = "",
    tenant: str = "",
) -> Turn:
    """Sends one message; with ``stream``, prints the reply as it arrives, then its sources.
    Sensitive notes are withheld from the reply unless ``include_sensitive`` (as the CLI's
    reads: only when the command says ``--include-sensitive``). With ``as_of`` the reply reads
    the memory as it stood at the end of that day, which its first line says."""
    turn = Turn(conversation_id=conversation)
    spinner = Spinner("thinking", show=stream and sys.stderr.isatty())
    spinner.start()
    request = pb.ChatRequest(
        tenant=tenant,
        conversation_id=conversation,
        message=message,
        persona=persona,
        include_sensitive=include_sensitive,
        as_of=as_of,
    )
    started = False
    try:
        async for event in stub.Chat(request):
            started = True
            kind = event.WhichOneof("event")
            if kind == "meta":
                turn.conversation_id = event.meta.conversation_id
                turn.as_of = event.meta.as_of
            elif kind == "delta":
                if stream and not turn.reply:
                    await spinner.stop()
                    print(prefix, end="")
                    if heading := as_of_heading(turn.as_of):
                        print(heading, end=" ")
                turn.reply += event.delta
                if stream:
                    print(event.delta, end="", flush=True)
            elif kind == "citations":
                turn.citations = list(event.citations.citations)
                turn.withheld = event.citations.withheld
            elif kind == "done":
                turn.message_id = event.done.message_id
    except grpc.aio.AioRpcError as exc:
        if not started:  # refused before the reply began: the command's error, as a call's
            raise
        # A failure after the reply began ends the stream with its status (as an ask's).
        turn.error = exc.details() or exc.code().name
        turn.error_code = exc.code().name
    finally:
        await spinner.stop()
    if stream:
        if turn.reply:
            print()
        if turn.error:
            print(f"[error: {turn.error_code}: {turn.error}]", file=sys.stderr)
        if turn.citations:
            print("Sources:\n" + render_citations(turn.citations))
        if turn.withheld:
            hint = "" if include_sensitive else "; --include-sensitive to use them"
            print(f"({turn.withheld} sensitive items withheld from the model{hint})")
    return turn


def _exit_code(turn: Turn) -> int:
    if not turn.error:
        return rpc.EXIT_OK
    if turn.error_code == "UNAVAILABLE":
        return rpc.EXIT_NOT_RUNNING
    code = getattr(grpc.StatusCode, turn.error_code, grpc.StatusCode.UNKNOWN)
    return rpc.CODES.get(code, rpc.EXIT_FAILED)


def chat(args: argparse.Namespace, settings: StackSettings) -> int:
    """One message (``memex chat "..."``), else a session reading one message per line."""
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    stream = not args.json

    def show(turn: Turn) -> None:
        if args.json:
            print(json.dumps(turn.as_json(), ensure_ascii=False), flush=True)

    async def one(stub: Stub) -> int:
        turn = await chat_turn(
            stub,
            args.conversation,
            args.message,
            args.persona,
            stream=stream,
            include_sensitive=args.include_sensitive,
            as_of=args.as_of.strip(),
            tenant=args.tenant,
        )
        show(turn)
        if turn.conversation_id and not args.json:
            print(f"(continue with: memex chat --conversation {turn.conversation_id})",
                  file=sys.stderr)  # fmt: skip
        if turn.message_id and not args.json:
            print(f"(evidence: memex evidence {turn.message_id})", file=sys.stderr)
        return _exit_code(turn)

    async def session(stub: Stub) -> int:
        conversation = args.conversation
        if interactive:
            print(f"memex chat ({args.persona or 'friend'}). {HELP}")
        while True:
            if interactive:
                print("\nyou> ", end="", flush=True)
            line = await asyncio.to_thread(sys.stdin.readline)
            text = line.strip()
            if not line or text in ("/exit", "/quit"):
                return rpc.EXIT_OK
            if text == "/new":
                conversation = ""
                print("(new conversation)")
                continue
            if text in ("/help", "/?"):
                print(HELP)
                continue
            if not text:
                continue
            prefix = "memex> " if interactive else ""
            turn = await chat_turn(
                stub,
                conversation,
                text,
                args.persona,
                stream=stream,
                prefix=prefix,
                include_sensitive=args.include_sensitive,
                as_of=args.as_of.strip(),
                tenant=args.tenant,
            )
            show(turn)
            if turn.error_code == "UNAVAILABLE":
                return _exit_code(turn)
            conversation = turn.conversation_id

    if args.message is not None and not args.message.strip():
        print("error: say something, or leave the message out for a session", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    result = run(settings, one if args.message is not None else session)
    return result if isinstance(result, int) else rpc.EXIT_OK

"""`memex ask` and `conversations`: talk to the running orchestrator (`forget` is in
forget_command.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import grpc

from memex.cli import rpc
from memex.cli.progress import Spinner
from memex.common.v1 import common_pb2
from memex.gateway.present import SUPPORT_LABELS, support_name
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.errors import MemexError
from memex.shared.stack_settings import StackSettings

# Kept for importers; the one definition is in rpc.
EXIT_FAILED, EXIT_BAD_INPUT, EXIT_NOT_RUNNING, EXIT_NOT_FOUND = (
    rpc.EXIT_FAILED,
    rpc.EXIT_BAD_INPUT,
    rpc.EXIT_NOT_RUNNING,
    rpc.EXIT_NOT_FOUND,
)
ABSTAINED = "— memex could not check that against your notes:"
REVISED = "— checked against your notes, the answer reads:"
UNFINISHED = "— (an unfinished draft, not checked against your notes)"
REDRAFTED = "— that draft is set aside"
T = TypeVar("T")
if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub


def render_citations(citations: Sequence[common_pb2.Citation]) -> str:
    """One line per citation: the reference, its support label, and the quote."""
    lines = []
    for number, c in enumerate(citations, start=1):
        quote = f' "{c.quote}"' if c.quote else ""
        label = SUPPORT_LABELS[support_name(c.support)]
        lines.append(f"  [{number}] {c.ref} ({label}){quote}")
    return "\n".join(lines)


def run(settings: StackSettings, work: Callable[[Stub], Awaitable[T]]) -> T | int:
    """Runs ``work`` against the orchestrator; failures become a message and an exit code."""
    return rpc.call(settings.orchestrator_addr, orchestrator_pb2_grpc.OrchestratorServiceStub, work)


@dataclass(frozen=True)
class Asked:
    """A streamed ask's checked answer, and the draft printed while the model wrote it."""

    reply: pb.AskResponse
    draft: str


async def stream_ask(
    stub: Stub, request: pb.AskRequest, *, live: bool, spin: bool, heading: str = ""
) -> Asked:
    """Asks over AskStream, with a spinner (``spin``) until the first words; with ``live``, prints
    the draft as the model writes it, after ``heading`` (a line of its own, when given). Returns
    the checked answer and the draft shown."""
    spinner = Spinner("thinking", spin)
    spinner.start()
    shown, reply = "", None
    try:
        try:
            async for event in stub.AskStream(pb.AskStreamRequest(ask=request)):
                kind = event.WhichOneof("event")
                if kind == "started" and event.started.sources:
                    spinner.label = f"writing from {len(event.started.sources)} sources"
                elif kind == "delta" and live:
                    text = event.delta if shown else event.delta.lstrip()
                    if text:
                        await spinner.stop()
                        if heading:
                            print(heading, flush=True)
                            heading = ""
                        shown += text
                        print(text, end="", flush=True)
                elif kind == "redraft" and live and shown:
                    # The draft on screen stays, marked as set aside; the new one follows it.
                    print(f"\n{REDRAFTED} ({event.redraft.reason})", flush=True)
                    shown = ""
                elif kind == "result":
                    reply = event.result
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED or shown:
                raise
            # A stack started before AskStream existed: the one-shot Ask answers the same.
            reply = await stub.Ask(request)
    finally:
        await spinner.stop()
        if shown and reply is None:  # failed or interrupted mid-draft: say what was on screen
            print()
            print(UNFINISHED, file=sys.stderr)
    if reply is None:
        raise MemexError("the answer ended before it was finished; try again")
    return Asked(reply, shown)


def _same(a: str, b: str) -> bool:
    return a.split() == b.split()


def settle_draft(draft: str, reply: pb.AskResponse) -> None:
    """After a draft was printed: ends its line, and shows the checked answer where it differs
    (an abstention, a revision, a note on withheld items)."""
    answer = reply.answer
    if _same(draft, answer):
        print()
    elif not reply.abstained and answer.startswith(draft.rstrip()):
        print(answer[len(draft.rstrip()) :])  # the draft stands; something was added to it
    else:
        ending = "" if draft.endswith("\n") else "\n"
        print(f"{ending}\n{ABSTAINED if reply.abstained else REVISED}\n{answer}")
    if reply.grounding.dropped:
        dropped = ", ".join(reply.grounding.dropped)
        print(f"— dropped from the draft, naming nothing memex showed the model: {dropped}")


def as_of_heading(as_of: str) -> str:
    """The first line of an answer from the memory as of a day; "" for now."""
    return f"As of {as_of}:" if as_of else ""


def ask(args: argparse.Namespace, settings: StackSettings) -> int:
    """One cited answer, streamed: on a terminal the draft shows as the model writes it, then the
    checked answer where it differs; elsewhere (and with --json) only the checked answer. With
    --as-of, from the memory as it stood at the end of that day, which the first line says."""
    if not args.question.strip():
        print("error: ask a question, e.g. memex ask 'when did I move?'", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    # As the CLI's reads: sensitive notes only when the command says so (issue 11).
    request = pb.AskRequest(
        tenant=args.tenant,
        question=args.question,
        persona=args.persona,
        limit=args.limit,
        include_sensitive=args.include_sensitive,
        as_of=args.as_of.strip(),
    )
    live = sys.stdout.isatty() and not args.json
    spin = sys.stderr.isatty() and not args.json
    heading = as_of_heading(request.as_of)
    asked = run(
        settings,
        lambda stub: stream_ask(stub, request, live=live, spin=spin, heading=heading),
    )
    if isinstance(asked, int):
        return asked
    reply = asked.reply
    if args.json:
        rpc.dump(reply)
        return rpc.EXIT_OK
    if asked.draft:
        settle_draft(asked.draft, reply)
    else:
        if heading := as_of_heading(reply.as_of or request.as_of):
            print(heading)
        print(reply.answer)
    if reply.opinion:
        print(f"\nOpinion (not from your notes): {reply.opinion}")
    if reply.citations:
        print("\nSources:\n" + render_citations(reply.citations))
    withheld = f", {reply.withheld} sensitive withheld" if reply.withheld else ""
    if reply.withheld and not args.include_sensitive:
        withheld += " (--include-sensitive to use them)"
    evidence = f"; evidence: memex evidence {reply.turn_id}" if reply.turn_id else ""
    print(
        f"\n— {reply.persona}, {reply.model}, {reply.latency_ms / 1000:.1f}s"
        f"{', abstained' if reply.abstained else ''}{withheld}{evidence}",
        file=sys.stderr,
    )
    return rpc.EXIT_OK


def conversations(args: argparse.Namespace, settings: StackSettings) -> int:
    """Lists conversations, or replays one."""
    if args.id:
        reply = run(
            settings,
            lambda s: s.GetConversation(
                pb.GetConversationRequest(
                    conversation_id=args.id, include_sensitive=args.include_sensitive
                )
            ),
        )
        if isinstance(reply, int):
            return reply
        if args.json:
            rpc.dump(reply)
            return rpc.EXIT_OK
        print(f"# {reply.conversation.title}  ({reply.conversation.persona})")
        for m in reply.messages:
            who = "you" if m.role == pb.MESSAGE_ROLE_USER else "memex"
            print(f"\n{who}> {m.text}")
            if m.citations:
                print(render_citations(m.citations))
        return rpc.EXIT_OK
    listed = run(
        settings, lambda s: s.ListConversations(pb.ListConversationsRequest(limit=args.limit))
    )
    if isinstance(listed, int):
        return listed
    if args.json:
        rpc.dump(listed)
        return rpc.EXIT_OK
    for c in listed.conversations:
        print(f"{c.id}  {c.updated_at[:16]}  {c.message_count:>3} msgs  {c.title}")
    if not listed.conversations:
        print("no conversations yet; start one with `memex chat`")
    return rpc.EXIT_OK

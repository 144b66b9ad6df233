"""`memex forget conversation ID | thread ID | note PATH-or-TITLE`: verified deletion.

Each form shows what it is about to forget and asks first on a terminal; a script passes
``--yes`` (without a terminal and without ``--yes`` nothing is forgotten: exit 2). After the
delete it looks again and prints a receipt: what was removed where and what remains, which must
be 0 everywhere; if anything remains it says where and exits 1. ``memex forget ID`` (the form
before threads and notes could be forgotten) still forgets a conversation, without asking.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

from memex.cli import rpc
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub

KINDS = ("conversation", "thread", "note")


def add_parser(commands: Any) -> None:
    """Registers `forget` on the CLI's subparsers."""
    parser = commands.add_parser(
        "forget",
        help="forget a conversation, a queued-chat thread or a note, and prove it is gone",
        description="Forgets what you name everywhere memex keeps it, searches again, and prints "
        "a receipt (exit 1 if anything remains).",
    )
    parser.add_argument("what", help="conversation, thread or note (or a conversation id)")
    parser.add_argument(
        "target", nargs="?", default=None, help="the id; for a note its vault path or title"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask (for scripts)")
    parser.add_argument("--dry-run", action="store_true", help="show what would go; change nothing")
    parser.add_argument("--json", action="store_true", help="the receipt as JSON")
    parser.set_defaults(run=forget)


def forget(args: argparse.Namespace, settings: StackSettings) -> int:
    """Dispatches to the kind of thing to forget."""
    if args.target is None:
        if args.what in KINDS:
            hint = "vault path or title" if args.what == "note" else "id"
            print(f"error: name the {args.what} to forget: its {hint}", file=sys.stderr)
            return rpc.EXIT_BAD_INPUT
        # `memex forget ID`: the conversation form from before threads and notes, unchanged
        args.target, args.what, args.yes = args.what, "conversation", True
    if args.what not in KINDS:
        print(
            f"error: cannot forget a {args.what!r}: say conversation, thread or note, then "
            "its id (or, for a note, its vault path or title)",
            file=sys.stderr,
        )
        return rpc.EXIT_BAD_INPUT
    if not args.target.strip():
        print(f"error: name the {args.what} to forget", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    handler: Callable[[argparse.Namespace, StackSettings], int] = {
        "conversation": _conversation,
        "thread": _thread,
        "note": _note,
    }[args.what]
    return handler(args, settings)


def _call(settings: StackSettings, work: Callable[[Stub], Any]) -> Any:
    return rpc.call(settings.orchestrator_addr, orchestrator_pb2_grpc.OrchestratorServiceStub, work)


def _confirm(args: argparse.Namespace, what: str) -> int | None:
    """None to go ahead; else the exit code (the person said no, or no one could be asked)."""
    if args.yes or args.dry_run:
        return None
    if not sys.stdin.isatty():
        print(f"error: not forgetting {what} without --yes (no terminal to ask)", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    try:
        answer = input(f"Forget {what}? This cannot be undone. [y/N] ").strip().lower()
    except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the prompt: a no
        answer = ""
        print()
    if answer in ("y", "yes"):
        return None
    print("nothing forgotten")
    return rpc.EXIT_OK


def _dry_run_or_confirm(args: argparse.Namespace, what: str) -> int | None:
    """None to go ahead; else the exit code: a dry run only says what it would forget, or the
    person was asked and said no (``_confirm``)."""
    if args.dry_run:
        print(f"Would forget {what}.")
        return rpc.EXIT_OK
    return _confirm(args, what)


async def _gone(call: Any) -> bool:
    """Whether a read of what was forgotten now answers NOT_FOUND (the check after a delete)."""
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            return True
        raise
    return False


def _conversation(args: argparse.Namespace, settings: StackSettings) -> int:
    # The owner forgets it: the receipt counts every message, sensitive replies included.
    request = pb.GetConversationRequest(conversation_id=args.target, include_sensitive=True)
    found = _call(settings, lambda s: s.GetConversation(request))
    if isinstance(found, int):
        return found
    count = len(found.messages)
    what = f"conversation {args.target} ({found.conversation.title!r}, {count} messages)"
    stop = _dry_run_or_confirm(args, what)
    if stop is not None:
        return stop

    async def work(stub: Stub) -> tuple[bool, int]:
        await stub.DeleteConversation(pb.DeleteConversationRequest(conversation_id=args.target))
        try:
            after = await stub.GetConversation(request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return True, 0
            raise
        return False, len(after.messages)

    result = _call(settings, work)
    if isinstance(result, int):
        return result
    gone, left = result
    lines = [("orchestrator", "conversation", 1, 0 if gone else 1)]
    lines.append(("orchestrator", "messages (and the telemetry of its turns)", count - left, left))
    return _receipt_simple(args, f"conversation {args.target}", lines)


def _thread(args: argparse.Namespace, settings: StackSettings) -> int:
    listing = pb.ListTurnsRequest(thread_id=args.target, include_sensitive=True)
    found = _call(settings, lambda s: s.ListTurns(listing))
    if isinstance(found, int):
        return found
    what = f"thread {args.target} ({len(found.turns)} turns)"
    stop = _dry_run_or_confirm(args, what)
    if stop is not None:
        return stop

    async def work(stub: Stub) -> tuple[pb.DeleteThreadResponse, bool]:
        reply = await stub.DeleteThread(pb.DeleteThreadRequest(thread_id=args.target))
        return reply, await _gone(stub.ListTurns(listing))

    result = _call(settings, work)
    if isinstance(result, int):
        return result
    reply, gone = result
    lines = [
        ("orchestrator", "thread", 1, 0 if gone else 1),
        (
            "orchestrator",
            "turns (questions and answers)",
            reply.turns_deleted,
            reply.turns_remaining,
        ),
    ]
    return _receipt_simple(args, f"thread {args.target}", lines)


def _receipt_simple(
    args: argparse.Namespace, name: str, lines: list[tuple[str, str, int, int]]
) -> int:
    """The receipt of a conversation or thread forget."""
    left = [line for line in lines if line[3]]
    if args.json:
        counts = [{"store": s, "what": w, "removed": r, "remaining": n} for s, w, r, n in lines]
        print(json.dumps({"forgot": name, "counts": counts, "complete": not left}, indent=2))
    else:
        print(f"Forgot {name}.\n")
        _table([(s, w, r, n) for s, w, r, n in lines])
        _verdict([(s, w, n) for s, w, _, n in left])
    return rpc.EXIT_FAILED if left else rpc.EXIT_OK


def _note(args: argparse.Namespace, settings: StackSettings) -> int:
    preview = _call(
        settings, lambda s: s.ForgetNote(pb.ForgetNoteRequest(note=args.target, dry_run=True))
    )
    if isinstance(preview, int):
        return preview
    if args.dry_run:
        if args.json:
            rpc.dump(preview)
        else:
            name = f"[[{preview.title}]] ({preview.path}, episode {preview.episode_id})"
            print(f"Would forget {name}:\n")
            _table([(c.store, c.what, c.removed, None) for c in preview.counts])
        return rpc.EXIT_OK
    stop = _confirm(args, f"the note [[{preview.title}]] ({preview.path})")
    if stop is not None:
        return stop
    # By episode id: the preview resolved the name, so the forget cannot pick another note.
    receipt = _call(settings, lambda s: s.ForgetNote(pb.ForgetNoteRequest(note=preview.episode_id)))
    if isinstance(receipt, int):
        return receipt
    left = [(c.store, c.what, c.remaining) for c in receipt.counts if c.remaining]
    left += [(c.store, c.description, c.found_after) for c in receipt.checks if c.found_after]
    if args.json:
        rpc.dump(receipt)
        return rpc.EXIT_OK if receipt.complete else rpc.EXIT_FAILED
    print(f"Forgot the note [[{receipt.title}]] ({receipt.path}, episode {receipt.episode_id}).\n")
    _table([(c.store, c.what, c.removed, c.remaining) for c in receipt.counts])
    print("\nSearched again (found before -> after):")
    for c in receipt.checks:
        print(f"  {c.store:<22} {c.description:<70} {c.found_before} -> {c.found_after}")
    print()
    _verdict(left)
    if receipt.scrubbed:
        print(
            "\nThe stores' files were scrubbed: deleted rows zeroed, the keyword index merged, the "
            "write-ahead logs truncated."
        )
    else:
        print(
            "\nNot every store's files could be scrubbed of the deleted bytes yet: Weaviate "
            "compacts deleted objects away in the background, and a write-ahead log held open by "
            "another process is overwritten by a later checkpoint."
        )
    if receipt.file_present:
        print(
            f"\nThe file {receipt.path} is still in your vault. "
            + (
                "memex recorded a tombstone (digests, not the text): `memex index` skips the "
                "file while it is unchanged, and indexes it again once you edit it. "
                if receipt.tombstoned
                else "The next `memex index` will read it again. "
            )
            + "Delete the file to forget it for good."
        )
    for kind, ids in (
        ("conversation", receipt.conversations_citing),
        ("thread", receipt.threads_citing),
    ):
        for ident in ids:
            print(
                f"Your {kind} {ident} cites this note and was left as it is; "
                f"`memex forget {kind} {ident}` removes it."
            )
    return rpc.EXIT_OK if receipt.complete and not left else rpc.EXIT_FAILED


def _table(lines: list[tuple[str, str, int, int | None]]) -> None:
    print(f"  {'store':<22} {'what':<42} {'removed':>8} {'remaining':>10}")
    for store, what, removed, remaining in lines:
        rest = "" if remaining is None else f"{remaining:>10}"
        print(f"  {store:<22} {what:<42} {removed:>8} {rest}")


def _verdict(left: list[tuple[str, str, int]]) -> None:
    """The last line of a receipt: 0 remaining, or where something remains (on stderr)."""
    if not left:
        print("0 remaining in every store.")
        return
    where = "; ".join(f"{store}: {what} ({n})" for store, what, n in left)
    print(f"NOT COMPLETE: something remains: {where}", file=sys.stderr)

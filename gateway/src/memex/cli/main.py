"""memex's command line: `memex --help` lists the commands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from pydantic import ValidationError

from memex.cli import (
    ask_commands,
    beliefs_commands,
    certs_command,
    chat_command,
    embed_command,
    evidence_command,
    forget_command,
    generate_command,
    key_commands,
    observe_command,
    options,
    records_commands,
    retrieval_commands,
    turn_commands,
)
from memex.cli.eval import command as eval_command
from memex.cli.stack import commands as stack_commands
from memex.shared.settings import describe_invalid
from memex.shared.stack_settings import StackSettings

Command = Callable[[argparse.Namespace, StackSettings], int]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memex",
        description="memex, your cited personal memory",
        epilog="exit codes: 0 ok, 1 failed, 2 bad input, 3 memex not running (`memex up`), "
        "4 not found, 5 timed out, 130 interrupted",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="start the stack on loopback and wait until it is healthy")
    up.add_argument("--foreground", action="store_true", help="supervise in this process")
    up.add_argument(
        "--store",
        choices=["embedded", "weaviate"],
        help="retrieval backend (default MEMEX_STORE, else embedded); weaviate runs its server",
    )
    up.add_argument(
        "--state",
        choices=["sqlite", "postgres"],
        help="the orchestrator's state (default MEMEX_STATE, else sqlite); postgres runs a local "
        "PostgreSQL in the data dir, or uses MEMEX_ORCHESTRATOR_STATE_URL when set",
    )
    up.add_argument(
        "--nodes",
        type=int,
        help="with --store weaviate: Weaviate nodes (default MEMEX_WEAVIATE_NODES, else 1); "
        "3 or more run a cluster with replication factor 3",
    )
    up.set_defaults(run=stack_commands.up)

    down = commands.add_parser("down", help="stop the stack")
    down.set_defaults(run=stack_commands.down)

    status = commands.add_parser("status", help="health of each service (exit 3: not running)")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(run=stack_commands.status)

    embed = commands.add_parser("embed", help="embed texts with the running embedding service")
    embed.add_argument("texts", nargs="+", help="texts to embed")
    embed.add_argument("--query", action="store_true", help="embed as queries, not documents")
    embed.add_argument("--json", action="store_true", help="print the vectors as JSON")
    embed.set_defaults(run=embed_command.embed)

    ask = commands.add_parser("ask", help="a cited answer from your memory")
    ask.add_argument("question")
    ask.add_argument("--persona", default="", help="analyst (default), coach, friend, skeptic, ...")
    ask.add_argument("--limit", type=int, default=0, help="items sent to the answer (default 8)")
    ask.add_argument("--json", action="store_true", help="the whole structured result as JSON")
    options.answer(ask, "answer")
    ask.set_defaults(run=ask_commands.ask)

    chat = commands.add_parser("chat", help="chat with streamed, cited replies (a session)")
    chat.add_argument("message", nargs="?", default=None, help="send one message and exit")
    chat.add_argument(
        "--persona", default="", help="friend (default), analyst, coach, skeptic, ..."
    )
    chat.add_argument("--conversation", default="", help="continue this conversation id")
    chat.add_argument("--json", action="store_true", help="one JSON object per reply")
    options.answer(chat, "reply")
    chat.set_defaults(run=chat_command.chat)

    convs = commands.add_parser("conversations", help="list conversations, or replay one")
    convs.add_argument("id", nargs="?", default="", help="a conversation to replay")
    convs.add_argument("--limit", type=int, default=50)
    convs.add_argument("--json", action="store_true", help="machine-readable output")
    convs.add_argument(
        "--include-sensitive",
        action="store_true",
        help="show replies that drew on sensitive notes (placeholders unless asked)",
    )
    convs.set_defaults(run=ask_commands.conversations)

    turn_commands.add_parsers(commands)
    forget_command.add_parser(commands)
    evidence_command.add_parser(commands)
    retrieval_commands.add_parsers(commands)
    records_commands.add_parsers(commands)
    beliefs_commands.add_parsers(commands)
    generate_command.add_parser(commands)
    key_commands.add_parsers(commands)
    eval_command.add_parser(commands)
    observe_command.add_parser(commands)
    certs_command.add_parser(commands)

    worker = commands.add_parser("worker", help="run the chat worker for queued turns (foreground)")
    worker.set_defaults(run=stack_commands.worker)

    mcp = commands.add_parser("mcp", help="run the MCP server on stdio (for MCP clients)")
    mcp.set_defaults(run=stack_commands.mcp)

    supervise = commands.add_parser("supervise")  # what `up` runs in the background
    supervise.set_defaults(run=stack_commands.supervise, foreground=True)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parses the command line and settings, runs the command, exits with its code."""
    args = _parser().parse_args(argv)
    try:
        settings = StackSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, StackSettings), file=sys.stderr)
        sys.exit(2)
    run: Command = args.run
    try:
        sys.exit(run(args, settings))
    except BrokenPipeError:
        # `memex search ... | head` closed the pipe: stop quietly, as other tools do. Standard
        # output now points at /dev/null, so Python's flush at exit cannot raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)

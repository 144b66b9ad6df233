"""`memex generate`: stream a reply from the running reasoner service.

A developer tool for trying the reasoner: it calls the reasoner's Generate directly, so the call
is not in the orchestrator's LLM log (SPEC B4 audits the stack's own model calls: ask, chat,
queued turns). The reasoner's port is the stack's, on ``MEMEX_HOST`` (loopback by default).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import grpc

from memex.gateway.reachability import unreachable
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.stack_settings import StackSettings

EXIT_BAD_INPUT = 2
EXIT_NOT_RUNNING = 3
EXIT_INTERRUPTED = 130


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `memex generate` to the command line."""
    parser = commands.add_parser(
        "generate", help="stream a reply from the running reasoner (for development: not audited)"
    )
    parser.add_argument("prompt", help="the user message")
    parser.add_argument("--system", default="", help="a system message to put first")
    parser.add_argument("--max-tokens", type=int, default=0, help="reply length cap (0: default)")
    parser.add_argument("--temperature", type=float, default=None, help="0 to 2 (default: server)")
    parser.add_argument("--seed", type=int, default=None, help="for a repeatable reply")
    parser.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    parser.add_argument("--json-schema", type=Path, help="a JSON Schema file the reply must match")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up")
    parser.add_argument("--quiet", action="store_true", help="no statistics on stderr")
    parser.set_defaults(run=generate)


def _request(args: argparse.Namespace) -> reasoner_pb2.GenerateRequest:
    messages = []
    if args.system:
        messages.append(reasoner_pb2.Message(role=reasoner_pb2.ROLE_SYSTEM, content=args.system))
    messages.append(reasoner_pb2.Message(role=reasoner_pb2.ROLE_USER, content=args.prompt))
    sampling = reasoner_pb2.Sampling(max_tokens=args.max_tokens, stop=args.stop)
    if args.temperature is not None:
        sampling.temperature = args.temperature
    if args.seed is not None:
        sampling.seed = args.seed
    schema = args.json_schema.read_text() if args.json_schema else ""
    return reasoner_pb2.GenerateRequest(messages=messages, sampling=sampling, json_schema=schema)


async def _stream(
    address: str, request: reasoner_pb2.GenerateRequest, timeout: float
) -> reasoner_pb2.GenerateFinal:
    async with open_channel(address, default_timeout=timeout) as channel:
        stub = reasoner_pb2_grpc.ReasonerServiceStub(channel)
        final = reasoner_pb2.GenerateFinal()
        async for message in stub.Generate(request, timeout=timeout):
            if message.HasField("delta"):
                sys.stdout.write(message.delta)
                sys.stdout.flush()
            else:
                final = message.final
        return final


def generate(args: argparse.Namespace, settings: StackSettings) -> int:
    """Streams the reply to stdout as it is generated; statistics go to stderr."""
    try:
        request = _request(args)
    except OSError as exc:
        print(f"cannot read {args.json_schema}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        final = asyncio.run(_stream(settings.reasoner_addr, request, args.timeout))
    except KeyboardInterrupt:
        print("\n(interrupted)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except grpc.aio.AioRpcError as exc:
        sys.stdout.write("\n")
        if unreachable(exc):
            print(
                f"the reasoner at {settings.reasoner_addr} is not reachable; start the stack "
                "with `memex up` (or `make up`)",
                file=sys.stderr,
            )
            return EXIT_NOT_RUNNING
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return EXIT_BAD_INPUT if exc.code() == grpc.StatusCode.INVALID_ARGUMENT else 1
    sys.stdout.write("\n")
    if not args.quiet:
        decode_s = (final.total_ms - final.time_to_first_token_ms) / 1000
        rate = (final.usage.completion_tokens - 1) / decode_s if decode_s > 0 else 0.0
        reason = reasoner_pb2.FinishReason.Name(final.finish_reason).removeprefix("FINISH_REASON_")
        print(
            f"[{final.model}: {reason.lower()}, {final.usage.prompt_tokens} prompt + "
            f"{final.usage.completion_tokens} completion tokens, first token "
            f"{final.time_to_first_token_ms:.0f} ms, {rate:.1f} tokens/s]",
            file=sys.stderr,
        )
    return 0

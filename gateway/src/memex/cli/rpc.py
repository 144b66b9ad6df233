"""How every CLI command calls the stack: one place for exit codes, the "not running" message
and JSON output.

Exit codes (documented in docs/cli.md): 0 ok, 1 failed, 2 bad input, 3 memex not running,
4 not found, 5 timed out, 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from memex.gateway.reachability import not_running_message, unreachable
from memex.shared.client import open_channel
from memex.shared.errors import InvalidArgument, MemexError, NotFound, PermissionDenied

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_RUNNING = 3
EXIT_NOT_FOUND = 4
EXIT_TIMEOUT = 5
EXIT_INTERRUPTED = 130
T = TypeVar("T")
CODES = {
    grpc.StatusCode.INVALID_ARGUMENT: EXIT_BAD_INPUT,
    grpc.StatusCode.PERMISSION_DENIED: EXIT_BAD_INPUT,
    grpc.StatusCode.FAILED_PRECONDITION: EXIT_BAD_INPUT,
    grpc.StatusCode.NOT_FOUND: EXIT_NOT_FOUND,
    grpc.StatusCode.DEADLINE_EXCEEDED: EXIT_TIMEOUT,
    grpc.StatusCode.UNAVAILABLE: EXIT_NOT_RUNNING,
}


def not_running(address: str) -> int:
    """Says how to start memex; the exit code for it."""
    print(not_running_message(address), file=sys.stderr)
    return EXIT_NOT_RUNNING


def call(
    address: str,
    make_stub: Callable[[grpc.aio.Channel], Any],
    body: Callable[[Any], Awaitable[T]],
    *,
    service: str = "",
    idempotent_methods: Iterable[str] = (),
    timeout: float = 600.0,
) -> T | int:
    """Runs ``body(stub)`` on a fresh channel; returns its result, or prints why it failed and
    returns the exit code."""

    async def go() -> T:
        async with open_channel(
            address,
            service=service,
            idempotent_methods=idempotent_methods,
            default_timeout=timeout,
        ) as channel:
            return await body(make_stub(channel))

    try:
        return asyncio.run(go())
    except grpc.aio.AioRpcError as exc:
        if unreachable(exc):
            return not_running(address)
        print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return CODES.get(exc.code(), EXIT_FAILED)
    except MemexError as exc:  # raised by client-side checks (e.g. resolving a name)
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, NotFound):
            return EXIT_NOT_FOUND
        return EXIT_BAD_INPUT if isinstance(exc, InvalidArgument | PermissionDenied) else 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def dump(message: Message) -> None:
    """Prints a proto message as JSON with proto field names, defaults included."""
    print(
        json.dumps(
            json_format.MessageToDict(
                message,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            ),
            indent=2,
            ensure_ascii=False,
        )
    )

"""`memex index`: indexing a vault is a write, so it goes to the retrieval service directly;
reads (`memex search` and the rest) go through the orchestrator (``records_commands``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf import json_format

from memex.cli import index_report, options, rpc
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.stack_settings import StackSettings

EXIT_BAD_INPUT = rpc.EXIT_BAD_INPUT
SERVICE = "memex.retrieval.v1.RetrievalService"
T = TypeVar("T")


def add_parsers(commands: Any) -> None:
    """Registers `index` on the CLI's subparsers."""
    index = commands.add_parser("index", help="index a vault folder (incremental)")
    index.add_argument("path", help="the vault folder")
    index.add_argument("--full", action="store_true", help="re-embed every note")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    options.tenant(index)
    index.set_defaults(run=index_command)


INDEX_TIMEOUT_SECONDS = 24 * 3600


def _call(settings: StackSettings, body: Callable[[Any], Awaitable[T]]) -> T | int:
    """Runs ``body(stub)``; RPC failures become a message and an exit code (see ``rpc``)."""
    return rpc.call(
        settings.retrieval_addr,
        retrieval_pb2_grpc.RetrievalServiceStub,
        body,
        service=SERVICE,
        timeout=3600,
    )


def _bar(done: int, total: int, path: str) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    name = path if len(path) <= 40 else "…" + path[-39:]
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name:<40}")
    sys.stderr.flush()


def index_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Indexes a vault through the running retrieval service, with a progress bar."""
    path = Path(args.path).expanduser().resolve()
    show = sys.stderr.isatty() and not args.json

    async def body(stub: retrieval_pb2_grpc.RetrievalServiceStub) -> retrieval_pb2.IndexSummary:
        summary = retrieval_pb2.IndexSummary()
        request = retrieval_pb2.IndexVaultRequest(
            tenant=args.tenant, vault_path=str(path), full=args.full
        )
        # An async stream on an aio channel, with its own deadline: a big vault is hours of
        # embedding on a laptop (Ctrl-C stops it; what was indexed stays).
        stream: Any = stub.IndexVault(request, timeout=INDEX_TIMEOUT_SECONDS)
        async for message in stream:
            if message.HasField("summary"):
                summary = message.summary
            elif show:
                _bar(message.done, message.total, message.current_path)
        if show:
            sys.stderr.write("\n")
        return summary

    result = _call(settings, body)
    if isinstance(result, int):
        return result
    index_report.save(settings, args.tenant, path, result)
    if args.json:
        print(
            json.dumps(json_format.MessageToDict(result, always_print_fields_with_no_presence=True))
        )
        return 0
    print(
        f"indexed {path} in {result.seconds:.1f}s: {result.added} added, {result.updated} "
        f"updated, {result.removed} removed, {result.unchanged} unchanged, "
        f"{len(result.skipped)} skipped; {result.chunks_embedded} chunks embedded, "
        f"{result.records_upserted} records upserted, {result.records_removed} removed"
    )
    for skipped in result.skipped:
        print(f"  skipped {skipped.path}: {skipped.reason}")
    for warning in result.warnings:
        print(f"  warning: {warning}")
    return 0

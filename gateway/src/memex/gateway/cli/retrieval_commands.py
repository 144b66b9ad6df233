"""`memex index` and `memex search`: the retrieval service from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf import json_format

from memex.common.v1 import common_pb2
from memex.gateway.cli import rpc
from memex.gateway.stack import StackSettings
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc

EXIT_BAD_INPUT = rpc.EXIT_BAD_INPUT
SERVICE = "memex.retrieval.v1.RetrievalService"
CHANNELS = {
    "vector": common_pb2.CHANNEL_VECTOR,
    "keyword": common_pb2.CHANNEL_KEYWORD,
    "graph": common_pb2.CHANNEL_GRAPH,
    "beliefs": common_pb2.CHANNEL_BELIEFS,
    "observations": common_pb2.CHANNEL_OBSERVATIONS,
}
CHANNEL_NAMES = {v: k for k, v in CHANNELS.items()}
T = TypeVar("T")


def add_parsers(commands: Any) -> None:
    """Registers `index` and `search` on the CLI's subparsers."""
    index = commands.add_parser("index", help="index a vault folder (incremental)")
    index.add_argument("path", help="the vault folder")
    index.add_argument("--full", action="store_true", help="re-embed every note")
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    index.add_argument("--tenant", default="", help="tenant (default: the single-user one)")
    index.set_defaults(run=index_command)

    search = commands.add_parser("search", help="hybrid search over the indexed memory")
    search.add_argument("query", help="what to look for")
    search.add_argument("-k", type=int, default=0, help="how many results (default 10)")
    search.add_argument(
        "--channels", default="", help=f"comma-separated, from: {', '.join(CHANNELS)}"
    )
    search.add_argument("--since", default="", help="only notes dated on or after YYYY-MM-DD")
    search.add_argument("--until", default="", help="only notes dated on or before YYYY-MM-DD")
    search.add_argument("--tag", action="append", default=[], help="only items with this tag")
    search.add_argument("--collection", action="append", default=[], help="record collection")
    search.add_argument("--include-sensitive", action="store_true", help="show sensitive items")
    search.add_argument("--contested", action="store_true", help="include contested beliefs")
    search.add_argument("--explain", action="store_true", help="show why each result ranked")
    search.add_argument("--json", action="store_true", help="print the response as JSON")
    search.add_argument("--tenant", default="")
    search.set_defaults(run=search_command)


def _call(settings: StackSettings, body: Callable[[Any], Awaitable[T]]) -> T | int:
    """Runs ``body(stub)``; RPC failures become a message and an exit code (see ``rpc``)."""
    return rpc.call(
        settings.retrieval_addr,
        retrieval_pb2_grpc.RetrievalServiceStub,
        body,
        service=SERVICE,
        idempotent_methods=["Search"],
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
        stream: Any = stub.IndexVault(request)  # an async stream on an aio channel
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


def search_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Searches and prints the results (with --explain, the reasons for each rank)."""
    names = [c.strip() for c in args.channels.split(",") if c.strip()]
    unknown = [c for c in names if c not in CHANNELS]
    if unknown:
        print(f"unknown channel {unknown[0]!r}: use {', '.join(CHANNELS)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    request = retrieval_pb2.SearchRequest(
        tenant=args.tenant,
        query=args.query,
        channels=[CHANNELS[c] for c in names],
        k=args.k,
        filters=retrieval_pb2.SearchFilters(
            window=common_pb2.TimeWindow(start=args.since, end=args.until),
            tags=args.tag,
            collections=args.collection,
            include_sensitive=args.include_sensitive,
            include_contested=args.contested,
        ),
    )
    reply = _call(settings, lambda stub: stub.Search(request))
    if isinstance(reply, int):
        return reply
    if args.json:
        print(json.dumps(json_format.MessageToDict(reply)))
        return 0
    if not reply.items:
        print("no results")
    for rank, item in enumerate(reply.items, start=1):
        print(format_item(rank, item, args.explain))
    if args.explain:
        print(f"(query embedding {reply.embed_ms:.1f} ms, search {reply.search_ms:.1f} ms)")
    return 0


def format_item(rank: int, item: retrieval_pb2.RetrievedItem, explain: bool) -> str:
    """One result, with the per-channel ranks and the score arithmetic when explaining."""
    p = item.provenance
    where = " > ".join(x for x in (p.path, p.heading) if x) or item.collection
    flag = "  [sensitive]" if item.sensitive else ""
    lines = [f"{rank:>2}. {item.citation}  {where}  {p.date}{flag}"]
    snippet = " ".join(item.text.split())
    lines.append(f"    {snippet[:160]}{'…' if len(snippet) > 160 else ''}")
    if explain:
        ranks = "  ".join(
            f"{CHANNEL_NAMES.get(c.channel, '?')} #{c.rank} ({c.score:.4g})"
            for c in item.channel_scores
        )
        lines.append(f"    channels: {ranks or 'none'}")
        lines.append(
            f"    fused {item.fused_score:.5f} x recency {item.recency_factor:.3f} "
            f"x salience {item.salience_factor:.3f} = {item.score:.5f}"
        )
    return "\n".join(lines)

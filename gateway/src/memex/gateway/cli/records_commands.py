"""`memex query`, `timeline`, `inbox` and `note`: structured reads from the retrieval service."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from google.protobuf import json_format, struct_pb2

from memex.gateway.cli import rpc
from memex.gateway.entities import resolve_entity
from memex.gateway.stack import StackSettings
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc

SERVICE = "memex.retrieval.v1.RetrievalService"
READS = ["QueryRecords", "PersonTimeline", "ListInbox", "GetNote"]
OPS = {
    "=": "eq", "==": "eq", "!=": "ne", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte",
    "~": "contains",
}  # fmt: skip
NAMES = ("eq", "ne", "lt", "lte", "gt", "gte", "contains", "in")


def add_parsers(commands: Any) -> None:
    """Registers `query`, `timeline`, `inbox` and `note`."""
    query = commands.add_parser("query", help="structured read of one record collection")
    query.add_argument("collection", help="entities, events, inbox, beliefs, observations")
    query.add_argument(
        "--where",
        nargs=3,
        action="append",
        default=[],
        metavar=("FIELD", "OP", "VALUE"),
        help=f"a condition, repeatable; OP: {', '.join(NAMES)} or = != < <= > >= ~ (contains); "
        "VALUE is JSON if it parses, else text",
    )
    query.add_argument("--sort", default="", help="a field; --sort=-date sorts descending")
    query.add_argument("--limit", type=int, default=0, help="at most this many (default 50)")
    _common(query)
    query.set_defaults(run=query_command)

    timeline = commands.add_parser("timeline", help="everything about a person, in date order")
    timeline.add_argument("person", help="an entity id, a name or an alias")
    timeline.add_argument("--limit", type=int, default=0, help="at most this many entries")
    _common(timeline)
    timeline.set_defaults(run=timeline_command)

    inbox = commands.add_parser("inbox", help="open inbox items, soonest first")
    inbox.add_argument("--limit", type=int, default=0)
    inbox.add_argument("--all", action="store_true", help="also done, archived and dismissed")
    _common(inbox)
    inbox.set_defaults(run=inbox_command)

    note = commands.add_parser("note", help="show a cited note by its episode id")
    note.add_argument("episode_id", help="a citation's episode_id (see `memex ask --json`)")
    _common(note)
    note.set_defaults(run=note_command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--tenant", default="", help="tenant (default: the single-user one)")


def _call(settings: StackSettings, body: Any) -> Any:
    return rpc.call(
        settings.retrieval_addr,
        retrieval_pb2_grpc.RetrievalServiceStub,
        body,
        service=SERVICE,
        idempotent_methods=READS,
        timeout=60,
    )


def parse_condition(field: str, op: str, value: str) -> retrieval_pb2.FieldFilter:
    """A filter condition from three words; ValueError naming what is wrong."""
    name = OPS.get(op, op)
    if name not in NAMES:
        raise ValueError(f"unknown operator {op!r}: use {', '.join(NAMES)} or = != < <= > >= ~")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value  # plain text, e.g. a name or a YYYY-MM-DD date
    wrapped = struct_pb2.Value()
    json_format.ParseDict(parsed, wrapped)
    return retrieval_pb2.FieldFilter(field=field, op=name, value=wrapped)


def _fields(record: retrieval_pb2.Record) -> dict[str, Any]:
    return json_format.MessageToDict(record.fields)


def record_line(record: retrieval_pb2.Record) -> str:
    """A record on one line: its citation, date, and its most telling text."""
    f = _fields(record)
    label = next((str(f[k]) for k in ("name", "title", "statement", "text") if f.get(k)), "")
    date = next((str(f[k]) for k in ("date", "due", "observed_at", "created") if f.get(k)), "")
    extra = f"  [{f['status']}]" if f.get("status") else ""
    extra += "  [sensitive]" if record.sensitive else ""
    return f"{date:<10}  {record.citation}  {label}{extra}"


def query_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints the records matching the conditions."""
    try:
        conditions = [parse_condition(*w) for w in args.where]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    request = retrieval_pb2.QueryRecordsRequest(
        tenant=args.tenant,
        collection=args.collection,
        filter=conditions,
        sort=args.sort,
        limit=args.limit,
    )
    reply = _call(settings, lambda stub: stub.QueryRecords(request))
    if isinstance(reply, int):
        return reply
    if args.json:
        rpc.dump(reply)
        return rpc.EXIT_OK
    for record in reply.records:
        print(record_line(record))
    if not reply.records:
        print(f"no {args.collection} records match")
    return rpc.EXIT_OK


def timeline_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints a person's timeline (a name or alias is resolved to the entity id first)."""

    async def body(stub: Any) -> retrieval_pb2.PersonTimelineResponse:
        entity_id = await resolve_entity(stub, args.person, args.tenant)
        request = retrieval_pb2.PersonTimelineRequest(
            tenant=args.tenant, entity_id=entity_id, limit=args.limit
        )
        reply: retrieval_pb2.PersonTimelineResponse = await stub.PersonTimeline(request)
        return reply

    reply = _call(settings, body)
    if isinstance(reply, int):
        return reply
    if args.json:
        rpc.dump(reply)
        return rpc.EXIT_OK
    entity = _fields(reply.entity)
    print(f"# {entity.get('name', reply.entity.id)}  ({reply.entity.citation})")
    if entity.get("description"):
        print(entity["description"])
    for entry in reply.entries:
        item = entry.item
        snippet = " ".join(item.text.split())
        snippet = snippet if len(snippet) <= 110 else snippet[:109] + "…"
        print(f"{entry.date or '(undated)':<10}  {item.citation}  {snippet}")
    return rpc.EXIT_OK


def inbox_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints the inbox."""
    request = retrieval_pb2.ListInboxRequest(
        tenant=args.tenant, limit=args.limit, include_done=args.all
    )
    reply = _call(settings, lambda stub: stub.ListInbox(request))
    if isinstance(reply, int):
        return reply
    if args.json:
        rpc.dump(reply)
        return rpc.EXIT_OK
    for item in reply.items:
        print(record_line(item))
    if not reply.items:
        print("the inbox is empty")
    return rpc.EXIT_OK


def note_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints a note: its title, path, date and tags, then its text."""
    request = retrieval_pb2.GetNoteRequest(tenant=args.tenant, episode_id=args.episode_id)
    reply = _call(settings, lambda stub: stub.GetNote(request))
    if isinstance(reply, int):
        return reply
    if args.json:
        rpc.dump(reply)
        return rpc.EXIT_OK
    tags = "  " + " ".join(f"#{t}" for t in reply.tags) if reply.tags else ""
    print(f"[[{reply.title}]]  {reply.path}  {reply.date}{tags}")
    print()
    print(reply.text.rstrip())
    return rpc.EXIT_OK

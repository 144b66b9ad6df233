"""`memex search`, `query`, `timeline`, `inbox` and `note`: memory reads, through the orchestrator.

The orchestrator applies the read policy (issue 11) and writes search telemetry. The CLI is the
owner at their own machine: sensitive items are left out unless a command says
``--include-sensitive``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import BaseModel

from memex.cli import options, rpc
from memex.gateway import reads
from memex.gateway.present import Note, NoteVersion, Record, SearchHit, Timeline
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.channels import CHANNELS
from memex.shared.stack_settings import StackSettings

SERVICE = "memex.orchestrator.v1.OrchestratorService"
READS = ["Search", "QueryRecords", "PersonTimeline", "ListInbox", "GetNote"]
OPS = {
    "=": "eq", "==": "eq", "!=": "ne", "<": "lt", "<=": "lte", ">": "gt", ">=": "gte",
    "~": "contains",
}  # fmt: skip
NAMES = ("eq", "ne", "lt", "lte", "gt", "gte", "contains", "in")


def add_parsers(commands: Any) -> None:
    """Registers `search`, `query`, `timeline`, `inbox` and `note`."""
    search = commands.add_parser("search", help="hybrid search over the indexed memory")
    search.add_argument("query", help="what to look for")
    search.add_argument("-k", type=int, default=0, help="how many results (default 10)")
    search.add_argument(
        "--channels", default="", help=f"comma-separated, from: {', '.join(CHANNELS)}"
    )
    search.add_argument("--persona", default="", help="whose search settings apply (analyst)")
    _window(search)
    search.add_argument("--tag", action="append", default=[], help="only items with this tag")
    search.add_argument("--collection", action="append", default=[], help="record collection")
    search.add_argument("--contested", action="store_true", help="include contested beliefs")
    search.add_argument("--explain", action="store_true", help="show why each result ranked")
    _as_of(search, "search your memory")
    _common(search)
    search.set_defaults(run=search_command)

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
    _window(query)
    _as_of(query, "the records")
    _common(query)
    query.set_defaults(run=query_command)

    timeline = commands.add_parser("timeline", help="everything about a person, in date order")
    timeline.add_argument("person", help="an entity id, a name or an alias")
    timeline.add_argument("--limit", type=int, default=0, help="at most this many entries")
    _window(timeline)
    _as_of(timeline, "the person and their entries")
    _common(timeline)
    timeline.set_defaults(run=timeline_command)

    inbox = commands.add_parser("inbox", help="open inbox items, soonest first")
    inbox.add_argument("--limit", type=int, default=0)
    inbox.add_argument("--all", action="store_true", help="also done, archived and dismissed")
    _as_of(inbox, "the inbox")
    _common(inbox)
    inbox.set_defaults(run=inbox_command)

    note = commands.add_parser("note", help="show a cited note by its episode id")
    note.add_argument(
        "episode_id",
        help="a citation's episode_id (see `memex ask --json`); NOTE_ID@vN: an earlier version",
    )
    _common(note)
    note.set_defaults(run=note_command)


def _as_of(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--as-of",
        default="",
        metavar="YYYY-MM-DD",
        help=f"{what} as it stood at the end of that day (docs/as-of.md)",
    )


def _window(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", default="", help="only items dated on or after YYYY-MM-DD")
    parser.add_argument("--until", default="", help="only items dated on or before YYYY-MM-DD")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--include-sensitive", action="store_true", help="include items marked sensitive"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    options.tenant(parser)


def _call(settings: StackSettings, body: Any) -> Any:
    return rpc.call(
        settings.orchestrator_addr,
        orchestrator_pb2_grpc.OrchestratorServiceStub,
        body,
        service=SERVICE,
        idempotent_methods=READS,
        timeout=60,
    )


def _dump(model: BaseModel) -> None:
    print(json.dumps(model.model_dump(), indent=2, ensure_ascii=False))


def _window_filters(args: argparse.Namespace) -> opb.MemoryFilters:
    """The date window, sensitivity and as-of day a read command was given."""
    return reads.filters(
        since=args.since,
        until=args.until,
        include_sensitive=args.include_sensitive,
        as_of=args.as_of.strip(),
    )


def _print_records(records: list[Record], key: str, as_json: bool, empty: str) -> int:
    """Prints records as JSON under ``key``, or one line each (``empty`` when there are none)."""
    if as_json:
        print(json.dumps({key: [r.model_dump() for r in records]}, indent=2))
        return rpc.EXIT_OK
    for record in records:
        print(record_line(record))
    if not records:
        print(empty)
    return rpc.EXIT_OK


def parse_condition(field: str, op: str, value: str) -> tuple[str, str, object]:
    """A filter condition from three words; ValueError naming what is wrong."""
    name = OPS.get(op, op)
    if name not in NAMES:
        raise ValueError(f"unknown operator {op!r}: use {', '.join(NAMES)} or = != < <= > >= ~")
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value  # plain text, e.g. a name or a YYYY-MM-DD date
    return field, name, parsed


def record_line(record: Record) -> str:
    """A record on one line: its citation, date, and its most telling text."""
    f = record.fields
    label = next((str(f[k]) for k in ("name", "title", "statement", "text") if f.get(k)), "")
    date = next((str(f[k]) for k in ("date", "due", "observed_at", "created") if f.get(k)), "")
    extra = f"  [{f['status']}]" if f.get("status") else ""
    extra += "  [sensitive]" if record.sensitive else ""
    return f"{date:<10}  {record.citation}  {label}{extra}"


def format_item(rank: int, item: SearchHit, explain: bool) -> str:
    """One result, with the per-channel ranks and the score arithmetic when explaining."""
    p = item.provenance
    where = " > ".join(x for x in (p.path, p.heading) if x) or item.collection
    flag = "  [sensitive]" if item.sensitive else ""
    lines = [f"{rank:>2}. {item.citation}  {where}  {p.date}{flag}"]
    snippet = " ".join(item.text.split())
    lines.append(f"    {snippet[:160]}{'…' if len(snippet) > 160 else ''}")
    if explain:
        ranks = "  ".join(f"{c.channel} #{c.rank} ({c.score:.4g})" for c in item.channel_scores)
        lines.append(f"    channels: {ranks or 'none'}")
        adjusted = (
            f"fused {item.fused_score:.5f} x recency {item.recency_factor:.3f} "
            f"x salience {item.salience_factor:.3f}"
        )
        if item.rerank_score is None:
            lines.append(f"    {adjusted} = {item.score:.5f}")
        else:
            rerank = f"reranked: model {item.rerank_score:.4g} -> {item.score:.5f}"
            lines.append(f"    {adjusted}; {rerank}")
    return "\n".join(lines)


def search_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Searches (with telemetry) and prints the results; --explain shows why each ranked."""
    try:
        request = reads.search(
            args.query,
            tenant=args.tenant,
            persona=args.persona,
            k=args.k,
            channels=[c.strip() for c in args.channels.split(",") if c.strip()],
            where=reads.filters(
                since=args.since,
                until=args.until,
                tags=args.tag,
                collections=args.collection,
                include_sensitive=args.include_sensitive,
                include_contested=args.contested,
                as_of=args.as_of.strip(),
            ),
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    reply = _call(settings, lambda stub: stub.Search(request))
    if isinstance(reply, int):
        return reply
    hits = [SearchHit.from_proto(i) for i in reply.items]
    if args.json:
        print(json.dumps({"items": [h.model_dump() for h in hits], "turn_id": reply.turn_id}))
        return rpc.EXIT_OK
    if not hits:
        print("no results")
    for rank, hit in enumerate(hits, start=1):
        print(format_item(rank, hit, args.explain))
    return rpc.EXIT_OK


def query_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints the records matching the conditions."""
    try:
        conditions = [parse_condition(*w) for w in args.where]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    request = reads.records(
        args.collection,
        conditions,
        tenant=args.tenant,
        sort=args.sort,
        limit=args.limit,
        where=_window_filters(args),
    )
    reply = _call(settings, lambda stub: stub.QueryRecords(request))
    if isinstance(reply, int):
        return reply
    records = [Record.from_proto(r) for r in reply.records]
    return _print_records(records, "records", args.json, f"no {args.collection} records match")


def timeline_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints a person's timeline (the orchestrator resolves a name or alias to the entity)."""
    request = opb.PersonTimelineRequest(
        tenant=args.tenant,
        person=args.person,
        limit=args.limit,
        filters=_window_filters(args),
    )
    reply = _call(settings, lambda stub: stub.PersonTimeline(request))
    if isinstance(reply, int):
        return reply
    timeline = Timeline.from_proto(reply)
    if args.json:
        _dump(timeline)
        return rpc.EXIT_OK
    entity = timeline.entity
    print(f"# {entity.fields.get('name', entity.id)}  ({entity.citation})")
    if entity.fields.get("description"):
        print(entity.fields["description"])
    for entry in timeline.entries:
        item = entry.item
        snippet = " ".join(item.text.split())
        snippet = snippet if len(snippet) <= 110 else snippet[:109] + "…"
        print(f"{entry.date or '(undated)':<10}  {item.citation}  {snippet}")
    return rpc.EXIT_OK


def inbox_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints the inbox."""
    request = opb.ListInboxRequest(
        tenant=args.tenant,
        limit=args.limit,
        include_done=args.all,
        include_sensitive=args.include_sensitive,
        as_of=args.as_of.strip(),
    )
    reply = _call(settings, lambda stub: stub.ListInbox(request))
    if isinstance(reply, int):
        return reply
    items = [Record.from_proto(r) for r in reply.items]
    return _print_records(items, "items", args.json, "the inbox is empty")


def version_line(version: NoteVersion, shown: str) -> str:
    """One version of a note: its number, when it held, its id; the current one and the one
    shown (``shown``: the shown note's episode id) marked."""
    until = version.valid_to or "now"
    marks = " (current)" if not version.valid_to else ""
    marks += " (shown)" if version.episode_id == shown and version.valid_to else ""
    return f"  v{version.number} {version.valid_from} to {until}  {version.episode_id}{marks}"


def note_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """Prints a note: its title, path, date and tags, then its text, then its versions."""
    request = opb.GetNoteRequest(
        tenant=args.tenant, episode_id=args.episode_id, include_sensitive=args.include_sensitive
    )
    reply = _call(settings, lambda stub: stub.GetNote(request))
    if isinstance(reply, int):
        return reply
    note = Note.from_proto(reply)
    if args.json:
        _dump(note)
        return rpc.EXIT_OK
    tags = "  " + " ".join(f"#{t}" for t in note.tags) if note.tags else ""
    print(f"{note.citation}  {note.path}  {note.date}{tags}")
    print()
    print(note.text.rstrip())
    if note.versions:
        print("\nVersions (docs/as-of.md):")
        for version in note.versions:
            print(version_line(version, note.episode_id))
    return rpc.EXIT_OK

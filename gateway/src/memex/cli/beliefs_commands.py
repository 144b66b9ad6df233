"""`memex reflect` and `memex beliefs [list|confirm|reject|forget]`: the learning loop
(issue 37, docs/reflect.md) from the terminal, through the orchestrator's belief RPCs."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memex.cli import rpc
from memex.gateway.present_beliefs import Belief, ReflectReport
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub

REFLECT_SECONDS = 3600.0
ACTIONS = ("list", "confirm", "reject", "forget")


def add_parsers(commands: Any) -> None:
    """Registers `reflect` and `beliefs` on the CLI's subparsers."""
    reflect = commands.add_parser(
        "reflect",
        help="derive beliefs from your recent notes (the learning loop)",
        description="Reads your notes of a window, asks the reasoner for conclusions with quotes, "
        "grades the quotes and keeps the beliefs resting on a verbatim or close one. Your own "
        "notes only; no sensitive note reaches a remote reasoner; every model call is audited.",
    )
    reflect.add_argument("--since", default="", help="notes dated on or after YYYY-MM-DD")
    reflect.add_argument("--until", default="", help="notes dated on or before YYYY-MM-DD")
    reflect.add_argument(
        "--days", type=int, default=None, help="notes of the last N days (instead of --since)"
    )
    reflect.add_argument(
        "--max-episodes", type=int, default=0, help="newest notes read at most (default 40)"
    )
    reflect.add_argument(
        "--include-sensitive",
        action="store_true",
        help="let sensitive notes feed it where the reasoner may see them (a local one, so set)",
    )
    reflect.add_argument("--json", action="store_true", help="the report as JSON")
    reflect.set_defaults(run=run_reflect)

    beliefs = commands.add_parser(
        "beliefs",
        help="list, confirm, reject or forget beliefs",
        description="list: beliefs, newest first. confirm ID / reject ID: your verdict on a "
        "derived belief (a rejected one is not made again from the same evidence). forget ID: "
        "delete a derived belief.",
    )
    beliefs.add_argument("action", nargs="?", default="list", choices=ACTIONS)
    beliefs.add_argument(
        "id", nargs="?", default="", help="the belief id (confirm, reject, forget)"
    )
    beliefs.add_argument("--include-sensitive", action="store_true", help="list sensitive ones")
    beliefs.add_argument("--include-rejected", action="store_true", help="list rejected ones")
    beliefs.add_argument("--limit", type=int, default=0, help="at most this many (default 100)")
    beliefs.add_argument("--json", action="store_true", help="machine-readable output")
    beliefs.set_defaults(run=run_beliefs)


def _call(settings: StackSettings, work: Callable[[Stub], Any], timeout: float = 600.0) -> Any:
    return rpc.call(
        settings.orchestrator_addr,
        orchestrator_pb2_grpc.OrchestratorServiceStub,
        work,
        timeout=timeout,
    )


def _show(belief: Belief) -> str:
    marks: list[str] = [belief.status]
    if belief.confirmed:
        marks.append("confirmed")
    if belief.sensitive:
        marks.append("sensitive")
    if not belief.derived:
        marks.append("from the vault")
    lines = [f"{belief.id}  [{', '.join(marks)}]  confidence {belief.confidence:.2f}"]
    lines.append(f"  {belief.statement}")
    for e in belief.evidence:
        lines.append(f'    + {e.date} {e.title} ({e.support}): "{e.quote}"')
    for e in belief.contradicted_by:
        lines.append(f'    - {e.date} {e.title} ({e.support}): "{e.quote}"')
    return "\n".join(lines)


def run_reflect(args: argparse.Namespace, settings: StackSettings) -> int:
    """`memex reflect`: one run, then its report."""
    since = args.since
    if args.days is not None:
        if args.days < 1 or since:
            print("error: --days takes a number of days >= 1, without --since", file=sys.stderr)
            return rpc.EXIT_BAD_INPUT
        since = (dt.date.today() - dt.timedelta(days=args.days)).isoformat()
    request = pb.ReflectRequest(
        since=since,
        until=args.until,
        max_episodes=args.max_episodes,
        include_sensitive=args.include_sensitive,
    )
    reply = _call(settings, lambda s: s.Reflect(request), timeout=REFLECT_SECONDS)
    if isinstance(reply, int):
        return reply
    report = ReflectReport.from_proto(reply)
    if args.json:
        print(json.dumps(report.model_dump(), indent=2, ensure_ascii=False))
        return rpc.EXIT_OK
    verbatim = f"{report.quotes_verbatim}/{report.quotes}" if report.quotes else "0/0"
    print(
        f"{report.episodes_read} notes read ({report.episodes_withheld} sensitive held back), "
        f"{report.model_calls} model calls, {report.seconds:.0f} s"
    )
    print(
        f"{report.proposed} conclusions proposed: {len(report.beliefs)} beliefs kept, "
        f"{report.dropped_unquoted} without a verbatim or close quote, "
        f"{report.dropped_unsupported} stating what their notes do not, "
        f"{report.dropped_rejected} rejected before; quotes verbatim {verbatim}"
    )
    if report.contested_earlier:
        print(f"{report.contested_earlier} earlier beliefs contested by newer notes")
    for belief in report.beliefs:
        print()
        print(_show(belief))
    return rpc.EXIT_OK


def run_beliefs(args: argparse.Namespace, settings: StackSettings) -> int:
    """`memex beliefs ACTION [ID]`."""
    if args.action == "list":
        request = pb.ListBeliefsRequest(
            include_sensitive=args.include_sensitive,
            include_rejected=args.include_rejected,
            limit=args.limit,
        )
        reply = _call(settings, lambda s: s.ListBeliefs(request))
        if isinstance(reply, int):
            return reply
        found = [Belief.from_proto(b) for b in reply.beliefs]
        if args.json:
            print(json.dumps([b.model_dump() for b in found], indent=2, ensure_ascii=False))
        elif not found:
            print("no beliefs yet: `memex reflect` derives them from your notes")
        else:
            print("\n\n".join(_show(b) for b in found))
        return rpc.EXIT_OK
    if not args.id.strip():
        print(f"error: name the belief to {args.action}: its id", file=sys.stderr)
        return rpc.EXIT_BAD_INPUT
    if args.action == "forget":
        gone = _call(settings, lambda s: s.ForgetBelief(pb.ForgetBeliefRequest(id=args.id)))
        if isinstance(gone, int):
            return gone
        print(f"forgot belief {args.id}" if gone.deleted else f"belief {args.id} was already gone")
        return rpc.EXIT_OK
    verdict = pb.BELIEF_VERDICT_CONFIRM if args.action == "confirm" else pb.BELIEF_VERDICT_REJECT
    review = pb.ReviewBeliefRequest(id=args.id, verdict=verdict)
    reply = _call(settings, lambda s: s.ReviewBelief(review))
    if isinstance(reply, int):
        return reply
    belief = Belief.from_proto(reply.belief)
    print(json.dumps(belief.model_dump(), ensure_ascii=False) if args.json else _show(belief))
    return rpc.EXIT_OK

"""`memex eval`: runs a question file against the running stack through the orchestrator's
AskStream and reports cited-correctness, citation precision, abstention and latency; with
``--search``, ranks the gold notes in plain searches and asks nothing (``search``); with
``--replay``, asks logged questions again and shows which answers changed (docs/eval.md)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from memex.cli import options, rpc
from memex.cli.eval import report as eval_report
from memex.cli.eval import search as eval_search
from memex.cli.eval.questions import (
    Question,
    QuestionFileError,
    load_queries,
    needs_queries,
    parse_questions,
    resolve_queries,
)
from memex.cli.eval.replay import Logged, compare, replay_set
from memex.cli.eval.scoring import Outcome, judge, summarize
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.errors import MemexError
from memex.shared.stack_settings import StackSettings

if TYPE_CHECKING:
    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub

# Where query-id question files (scifact) find their queries.jsonl unless --data says otherwise:
# the reference data beside the checkout, relative to where memex runs (the repo root for make).
DEFAULT_DATA = Path("../shared/eval/scifact-train")
# These end the run: the stack is down, or it predates AskStream. Anything else fails one question.
FATAL = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED}


def add_parser(commands: Any) -> None:
    """Registers `eval` on the CLI's subparsers."""
    p = commands.add_parser(
        "eval",
        help="score answers to a question file (or --replay logged asks)",
        description="Runs a JSON Lines question file against the running stack and reports "
        "cited-correct rate, citation precision, abstention and latency (docs/eval.md).",
    )
    p.add_argument("questions", nargs="?", default="", help="the question file (.jsonl)")
    p.add_argument("--persona", default="", help="ask with this persona (default analyst)")
    p.add_argument("--limit", type=int, default=0, help="only the first N questions (asks)")
    p.add_argument(
        "--concurrency", type=int, default=1, help="asks in flight at once (default 1: latency)"
    )
    options.tenant(p)
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"folder with queries.jsonl for query_id questions (default {DEFAULT_DATA})",
    )
    p.add_argument("--out", type=Path, default=None, help="also write a Markdown report here")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument(
        "--include-sensitive",
        action="store_true",
        help="let the answers use notes marked sensitive (as `memex ask`: left out unless asked)",
    )
    p.add_argument(
        "--search",
        action="store_true",
        help="retrieval alone: where each gold note ranks in a search, no model (seconds)",
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="ask logged questions again (newest first) and show which answers changed",
    )
    p.set_defaults(run=eval_command)


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return rpc.EXIT_BAD_INPUT


def load(path: Path, data: Path | None) -> list[Question] | int:
    """The question file, validated and resolved; an exit code (after saying why) otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return _bad(f"cannot read {path}: {exc.strerror or exc}")
    try:
        questions = parse_questions(text.splitlines(), str(path))
        if not needs_queries(questions):
            return questions
        queries = (data or DEFAULT_DATA) / "queries.jsonl"
        if not queries.is_file():
            print(
                f"skipped: {path} names query ids, and {queries} is missing "
                "(the BEIR data; point --data at its folder)",
                file=sys.stderr,
            )
            return rpc.EXIT_OK
        return resolve_queries(questions, load_queries(queries), str(path))
    except QuestionFileError as exc:
        return _bad(str(exc))
    except (OSError, ValueError, KeyError) as exc:
        return _bad(f"cannot read the queries: {exc}")


async def ask_one(stub: Stub, request: pb.AskRequest) -> tuple[Outcome, pb.AskResponse | None]:
    """One streamed ask, timed: the result, and when the first words came."""
    started = time.perf_counter()
    first: float | None = None  # the first words shown
    final: float | None = None  # the first words of the draft after the last redraft
    redrafted = False
    briefed: tuple[str, ...] = ()
    briefed_paths: tuple[str, ...] = ()
    try:
        async for event in stub.AskStream(pb.AskStreamRequest(ask=request)):
            kind = event.WhichOneof("event")
            if kind == "started":
                briefed = tuple(event.started.sources)
                briefed_paths = tuple(event.started.source_paths)
            elif kind == "delta" and event.delta.strip():
                first = first or time.perf_counter()
                final = final or time.perf_counter()
            elif kind == "redraft":
                redrafted, final = True, None
            elif kind == "result":
                done = time.perf_counter()
                r = event.result
                return Outcome(
                    answer=r.answer,
                    abstained=r.abstained,
                    cited_refs=tuple(c.ref for c in r.citations),
                    cited_paths=tuple(c.path for c in r.citations),
                    latency_ms=(done - started) * 1000,
                    first_words_ms=((first or done) - started) * 1000,
                    briefed=briefed,
                    briefed_paths=briefed_paths,
                    redrafted=redrafted,
                    final_words_ms=((final or done) - started) * 1000,
                ), r
    except grpc.aio.AioRpcError as exc:
        if exc.code() in FATAL:
            raise
        return Outcome(error=f"{exc.code().name}: {exc.details()}"), None
    return Outcome(error="the stream ended without a result"), None


def _progress(done: int, total: int, label: str, verdict: str, outcome: Outcome) -> None:
    took = f" {outcome.latency_ms / 1000:.1f}s" if not outcome.error else ""
    print(f"[{done}/{total}] {label}: {verdict}{took}", file=sys.stderr, flush=True)


async def _ask_all(
    stub: Stub, requests: Sequence[pb.AskRequest], concurrency: int, labels: Sequence[str]
) -> list[tuple[Outcome, pb.AskResponse | None]]:
    """Every ask, at most ``concurrency`` at once, results in the order asked."""
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(i: int) -> tuple[Outcome, pb.AskResponse | None]:
        nonlocal done
        async with gate:
            result = await ask_one(stub, requests[i])
        done += 1
        verdict = "error" if result[0].error else "abstained" if result[0].abstained else "answered"
        _progress(done, len(requests), labels[i], verdict, result[0])
        return result

    return list(await asyncio.gather(*(one(i) for i in range(len(requests)))))


def eval_command(args: argparse.Namespace, settings: StackSettings) -> int:
    """`memex eval QUESTIONS` or `memex eval --replay`."""
    if args.limit < 0:
        return _bad("--limit must be >= 0")
    if args.concurrency < 1:
        return _bad("--concurrency must be at least 1")
    if args.replay:
        if args.questions:
            return _bad("--replay asks logged questions; give no question file")
        if args.search:
            return _bad("--search needs a question file; --replay asks logged questions")
        return replay(args, settings)
    if not args.questions:
        return _bad("give a question file, e.g. memex eval demo/eval/questions.jsonl")
    loaded = load(Path(args.questions), args.data)
    if isinstance(loaded, int):
        return loaded
    questions = loaded[: args.limit] if args.limit else loaded
    if args.search:
        return search_only(args, settings, questions)
    requests = [
        pb.AskRequest(
            tenant=args.tenant,
            question=q.question,
            persona=args.persona,
            include_sensitive=args.include_sensitive,
        )
        for q in questions
    ]
    answered = rpc.call(
        settings.orchestrator_addr,
        orchestrator_pb2_grpc.OrchestratorServiceStub,
        lambda stub: _ask_all(stub, requests, args.concurrency, [q.id for q in questions]),
    )
    if isinstance(answered, int):
        return answered
    rows = [judge(q, outcome) for q, (outcome, _) in zip(questions, answered, strict=True)]
    summary = summarize(rows)
    results = [r for _, r in answered if r is not None]
    meta = {
        "file": args.questions,
        "persona": results[0].persona if results else args.persona,
        "model": results[0].model if results else "",
        # What sized each ask's first pass (docs/orchestrator.md): two runs of one head that
        # measured different speeds read different sources first, so pair runs by it too.
        "prefill_tokens_per_second": _prefill_at_load(settings),
    }
    if args.out:
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(eval_report.render_markdown(summary, rows, meta), encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return rpc.EXIT_FAILED
    if args.json:
        print(
            json.dumps(eval_report.report_dict(summary, rows, meta), indent=2, ensure_ascii=False)
        )
    else:
        print(eval_report.render_text(summary, rows, meta))
        if args.out:
            print(f"\nreport: {args.out}")
    return rpc.EXIT_OK


def _prefill_at_load(settings: StackSettings) -> float:
    """The reasoner's prefill speed, measured when it loaded; 0 when unknown or unreachable."""

    async def go() -> float:
        async with open_channel(settings.reasoner_addr, default_timeout=10) as channel:
            stub = reasoner_pb2_grpc.ReasonerServiceStub(channel)
            reply = await stub.Info(reasoner_pb2.InfoRequest(), timeout=10)
            return round(reply.prefill_tokens_per_second, 1)

    try:
        return asyncio.run(go())
    except (grpc.aio.AioRpcError, MemexError):
        return 0.0


def search_only(
    args: argparse.Namespace, settings: StackSettings, questions: Sequence[Question]
) -> int:
    """`memex eval QUESTIONS --search`: ranks of the gold notes, no answers (``search``)."""
    if args.out:
        return _bad("--out writes the answer report; with --search use --json")
    template = pb.SearchRequest(
        tenant=args.tenant,
        persona=args.persona,
        filters=pb.MemoryFilters(include_sensitive=args.include_sensitive),
    )
    answerable = [q for q in questions if q.answerable]
    rows = rpc.call(
        settings.orchestrator_addr,
        orchestrator_pb2_grpc.OrchestratorServiceStub,
        lambda stub: eval_search.search_all(stub, answerable, template),
    )
    if isinstance(rows, int):
        return rows
    summary = eval_search.summarize(rows)
    if args.json:
        report = {"file": args.questions, **eval_search.report_dict(summary, rows)}
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(eval_search.render_text(summary, rows))
    return rpc.EXIT_OK


def replay(args: argparse.Namespace, settings: StackSettings) -> int:
    """Asks logged questions again with the persona they were asked with; shows what changed."""

    async def work(stub: Stub) -> list[tuple[Logged, Outcome]]:
        # Over-fetch: repeats of one question are replayed once.
        fetch = max(args.limit * 4, 50) if args.limit else 500
        listed = await stub.ListLoggedAsks(
            pb.ListLoggedAsksRequest(tenant=args.tenant, limit=fetch)
        )
        chosen = replay_set(
            [
                Logged(
                    turn_id=a.turn_id,
                    question=a.question,
                    persona=a.persona,
                    answer=a.answer,
                    abstained=a.abstained,
                    cited_refs=tuple(a.cited_refs),
                    created_at=a.created_at,
                )
                for a in listed.asks
            ],
            args.limit,
        )
        requests = [
            pb.AskRequest(
                tenant=args.tenant,
                question=a.question,
                persona=a.persona,
                include_sensitive=args.include_sensitive,
            )
            for a in chosen
        ]
        labels = [a.turn_id[:8] for a in chosen]
        now = await _ask_all(stub, requests, args.concurrency, labels)
        return [(a, outcome) for a, (outcome, _) in zip(chosen, now, strict=True)]

    replayed = rpc.call(
        settings.orchestrator_addr, orchestrator_pb2_grpc.OrchestratorServiceStub, work
    )
    if isinstance(replayed, int):
        return replayed
    changes = [compare(logged, now) for logged, now in replayed]
    if args.json:
        print(
            json.dumps(
                {
                    **eval_report.replay_counts(changes),
                    "asks": [eval_report.change_dict(c) for c in changes],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    elif not changes:
        print("no logged asks to replay; ask something first (`memex ask`, or `memex eval`)")
    else:
        print(eval_report.render_replay(changes))
    return rpc.EXIT_OK

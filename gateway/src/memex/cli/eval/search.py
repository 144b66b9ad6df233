"""`memex eval --search`: retrieval alone on a question file. Each answerable question is searched
as `memex search` does (the orchestrator's Search, with the persona's settings) and judged by where
its first gold note ranks among the distinct notes found. No model runs, so a run takes seconds
and gives the same figures every time: the way to compare retrieval settings on notes without
the answer model's noise (docs/eval.md)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

from memex.cli.eval.questions import Question
from memex.cli.eval.report import rate_dict, rate_text
from memex.cli.eval.scoring import Rate, gold_position, percentile
from memex.orchestrator.v1 import orchestrator_pb2 as pb

if TYPE_CHECKING:
    from memex.orchestrator.v1 import orchestrator_pb2_grpc

    Stub = orchestrator_pb2_grpc.OrchestratorServiceAsyncStub

DEPTH = 10  # results asked per question; a gold note below them counts as missed
CUTOFFS = (1, 3, DEPTH)


@dataclass(frozen=True)
class SearchRow:
    """Where one question's first gold note ranked (1-based among distinct notes), or None."""

    question: Question
    found: tuple[str, ...] = ()  # distinct citations, best first
    gold_at: int | None = None
    search_ms: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class SearchSummary:
    """Retrieval metrics over the answerable questions of a file."""

    questions: int
    errors: int
    gold_within: dict[int, Rate]  # cutoff -> questions whose gold note ranked at or above it
    mrr: float | None  # mean of 1 / rank of the first gold note (0 when missed)
    search_ms: dict[str, float | None]


def judge(question: Question, citations: Sequence[str], search_ms: float) -> SearchRow:
    """One question's row from the citations of its results, in rank order."""
    found = tuple(dict.fromkeys(citations))
    return SearchRow(question, found, gold_position(found, question.gold), search_ms)


def summarize(rows: Sequence[SearchRow]) -> SearchSummary:
    """The run's metrics. A search that failed counts as a miss."""
    total = len(rows)
    ranks = [r.gold_at for r in rows if not r.error]
    timings = [r.search_ms for r in rows if not r.error]
    return SearchSummary(
        questions=total,
        errors=sum(bool(r.error) for r in rows),
        gold_within={c: Rate(sum(g is not None and g <= c for g in ranks), total) for c in CUTOFFS},
        mrr=sum(1 / g for g in ranks if g is not None) / total if total else None,
        search_ms={"p50": percentile(timings, 50), "p95": percentile(timings, 95)},
    )


async def search_all(
    stub: Stub, questions: Sequence[Question], template: pb.SearchRequest
) -> list[SearchRow]:
    """Searches every question in turn (``template`` carries tenant, persona and filters)."""
    rows = []
    for q in questions:
        request = pb.SearchRequest()
        request.CopyFrom(template)
        request.query, request.k = q.question, DEPTH
        started = time.perf_counter()
        try:
            reply = await stub.Search(request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE:
                raise
            rows.append(SearchRow(q, error=f"{exc.code().name}: {exc.details()}"))
            continue
        took = (time.perf_counter() - started) * 1000
        rows.append(judge(q, [i.citation for i in reply.items], took))
    return rows


def report_dict(summary: SearchSummary, rows: Sequence[SearchRow]) -> dict[str, Any]:
    """The run as JSON (``--json``)."""
    return {
        "questions": summary.questions,
        "errors": summary.errors,
        "metrics": {
            **{f"gold_at_{c}": rate_dict(r) for c, r in summary.gold_within.items()},
            "mrr": summary.mrr,
            "search_ms": summary.search_ms,
        },
        "rows": [
            {
                "id": r.question.id,
                "question": r.question.question,
                "gold": list(r.question.gold),
                "gold_at": r.gold_at,
                "found": list(r.found),
                "search_ms": round(r.search_ms, 1),
                "error": r.error,
            }
            for r in rows
        ],
    }


def render_text(summary: SearchSummary, rows: Sequence[SearchRow]) -> str:
    """The metrics, then each question whose gold note was not first."""
    errors = f", {summary.errors} failed to run" if summary.errors else ""
    lines = [f"{summary.questions} answerable questions searched (k={DEPTH}{errors})", ""]
    for cutoff, rate in summary.gold_within.items():
        label = "gold note first" if cutoff == 1 else f"gold note in the top {cutoff}"
        lines.append(f"  {label:<32} {rate_text(rate)}")
    mrr = "n/a" if summary.mrr is None else f"{summary.mrr:.3f}"
    lines.append(f"  {'mean reciprocal rank':<32} {mrr}")
    p50, p95 = summary.search_ms["p50"], summary.search_ms["p95"]
    if p50 is not None and p95 is not None:
        lines.append(f"  {'search p50 / p95':<32} {p50:.0f} / {p95:.0f} ms")
    late = [r for r in rows if r.gold_at != 1]
    if late:
        lines += ["", f"Gold note not first ({len(late)}):"]
    for r in late:
        where = r.error or (f"rank {r.gold_at}" if r.gold_at else f"not in the top {DEPTH}")
        lines.append(f"\n  [{r.question.id}] {r.question.question}")
        lines.append(f"    gold:  {', '.join(r.question.gold)} ({where})")
        if r.found:
            lines.append(f"    found: {', '.join(r.found[:3])}")
    return "\n".join(lines)

"""`memex eval`'s scoring: the checks of docs/eval.md on each answer, and the metrics over a run.
Pure functions; the command (``command``) feeds them what the stack answered. Questions come
from ``questions``, fact and citation matching from ``matching``; the replay diff is
``replay``. Exact definitions are in docs/eval.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memex.cli.eval.matching import is_gold, missing_facts
from memex.cli.eval.questions import Question

# Sources counted as "leading" by the retrieval metric: about what the ask's first pass reads on
# a 2-core CPU (docs/orchestrator.md), so a gold note below them is answered only by widening.
LEADING = 3


@dataclass(frozen=True)
class Outcome:
    """What the stack answered to one question; ``error`` set when the ask failed."""

    answer: str = ""
    abstained: bool = False
    cited_refs: tuple[str, ...] = ()
    latency_ms: float = 0.0
    first_words_ms: float = 0.0
    error: str = ""
    briefed: tuple[str, ...] = ()  # the sources the model was given, in their order [1]..[n]
    # The first draft was set aside (a first pass that did not stand); ``final_words_ms`` is when
    # the first words of the draft that became the answer came (= first_words_ms otherwise).
    redrafted: bool = False
    final_words_ms: float = 0.0
    # The vault path of each cited note, in the order of ``cited_refs`` ("" for a record); empty
    # for answers logged before citations had paths.
    cited_paths: tuple[str, ...] = ()
    briefed_paths: tuple[str, ...] = ()  # the briefed sources' notes' paths, as ``cited_paths``


@dataclass(frozen=True)
class Row:
    """One question's verdict."""

    question: Question
    outcome: Outcome
    ok: bool
    failed: tuple[str, ...]  # which checks failed, e.g. ("abstained",), ("missing fact: £48",)
    citations: int  # distinct refs counted for precision (answered questions only)
    precise: int
    # Where retrieval put the first gold note: its source number, None when it was not briefed.
    gold_at: int | None = None


def with_paths(refs: Sequence[str], paths: Sequence[str]) -> list[tuple[str, str]]:
    """Each ref with its note's path ("" where none was given)."""
    return list(zip(refs, [*paths, *[""] * (len(refs) - len(paths))], strict=False))


def gold_position(
    briefed: Sequence[str], gold: Iterable[str], paths: Sequence[str] = ()
) -> int | None:
    """The number ([1]..[n]) of the first gold note among the briefed sources, or None."""
    gold = list(gold)
    found = (i for i, (r, p) in enumerate(with_paths(briefed, paths), 1) if is_gold(r, gold, p))
    return next(found, None)


def judge(question: Question, outcome: Outcome) -> Row:
    """Applies the checks of docs/eval.md to one answer."""
    refs = tuple(dict.fromkeys(with_paths(outcome.cited_refs, outcome.cited_paths)))
    if outcome.error:
        return Row(question, outcome, False, (f"error: {outcome.error}",), 0, 0)
    answered = not outcome.abstained
    counted = len(refs) if answered else 0
    if not question.answerable:
        failed = () if outcome.abstained else ("answered (should abstain)",)
        return Row(question, outcome, not failed, failed, counted, 0)
    gold_at = gold_position(outcome.briefed, question.gold, outcome.briefed_paths)
    precise = sum(is_gold(r, question.gold, p) for r, p in refs) if answered else 0
    if not answered:
        return Row(question, outcome, False, ("abstained",), 0, 0, gold_at)
    checks = [f"missing fact: {f}" for f in missing_facts(outcome.answer, question.facts)]
    if not precise:
        checks.append("no gold citation")
    return Row(question, outcome, not checks, tuple(checks), counted, precise, gold_at)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), linearly interpolated between ranks; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Rate:
    """``hits`` of ``total``; ``value`` is None when there was nothing to count."""

    hits: int
    total: int

    @property
    def value(self) -> float | None:
        return self.hits / self.total if self.total else None


@dataclass(frozen=True)
class Summary:
    """The metrics over a run (definitions in docs/eval.md)."""

    questions: int
    answerable: int
    unanswerable: int
    errors: int
    cited_correct: Rate
    citation_precision: Rate
    abstention: Rate
    false_abstention: Rate
    # Retrieval's share: answerable questions whose gold note was briefed at all, and among the
    # first LEADING sources (what a slow CPU's first pass reads).
    gold_briefed: Rate = Rate(0, 0)
    gold_leading: Rate = Rate(0, 0)
    latency_ms: dict[str, float | None] = field(default_factory=dict)
    first_words_ms: dict[str, float | None] = field(default_factory=dict)
    redrafted: Rate = Rate(0, 0)
    final_words_ms: dict[str, float | None] = field(default_factory=dict)


def summarize(rows: Sequence[Row]) -> Summary:
    """The run's metrics from its rows. Failed asks count against every rate they belong to and
    are left out of the latencies."""
    answerable = [r for r in rows if r.question.answerable]
    unanswerable = [r for r in rows if not r.question.answerable]
    ran = [r for r in rows if not r.outcome.error]
    latencies = [r.outcome.latency_ms for r in ran]
    briefed = [r for r in answerable if r.outcome.briefed]
    first = [r.outcome.first_words_ms for r in ran]
    final = [r.outcome.final_words_ms for r in ran]
    return Summary(
        questions=len(rows),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        errors=len(rows) - len(ran),
        cited_correct=Rate(sum(r.ok for r in answerable), len(answerable)),
        citation_precision=Rate(sum(r.precise for r in rows), sum(r.citations for r in rows)),
        abstention=Rate(
            sum(r.outcome.abstained and not r.outcome.error for r in unanswerable),
            len(unanswerable),
        ),
        false_abstention=Rate(
            sum(r.outcome.abstained and not r.outcome.error for r in answerable), len(answerable)
        ),
        gold_briefed=Rate(sum(r.gold_at is not None for r in briefed), len(briefed)),
        gold_leading=Rate(
            sum(r.gold_at is not None and r.gold_at <= LEADING for r in briefed), len(briefed)
        ),
        latency_ms={"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        first_words_ms={"p50": percentile(first, 50), "p95": percentile(first, 95)},
        redrafted=Rate(sum(r.outcome.redrafted for r in ran), len(ran)),
        final_words_ms={"p50": percentile(final, 50), "p95": percentile(final, 95)},
    )

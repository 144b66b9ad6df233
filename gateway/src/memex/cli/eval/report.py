"""How `memex eval` shows a run: a text summary with the failures, a JSON report and a Markdown
report; and the replay diff. No transport here either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from memex.cli.eval.replay import Change, squash
from memex.cli.eval.scoring import LEADING, Rate, Row, Summary

EXCERPT = 160


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """The answer on one line, cut at a word boundary."""
    text = squash(text)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut + "…"


def rate_text(rate: Rate) -> str:
    """A rate as "75% (36/48)", or "n/a" when there was nothing to count."""
    value = rate.value
    return "n/a" if value is None else f"{value:.0%} ({rate.hits}/{rate.total})"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1000:.2f}s"


def metric_lines(s: Summary) -> list[tuple[str, str]]:
    """(label, value) for every metric, in the order shown."""
    return [
        ("cited-correct (answerable)", rate_text(s.cited_correct)),
        ("citation precision", rate_text(s.citation_precision)),
        ("abstention (unanswerable)", rate_text(s.abstention)),
        ("false abstention (answerable)", rate_text(s.false_abstention)),
        ("gold note briefed (answerable)", rate_text(s.gold_briefed)),
        (f"gold note in sources [1]-[{LEADING}]", rate_text(s.gold_leading)),
        ("ask latency p50 / p95", f"{_ms(s.latency_ms['p50'])} / {_ms(s.latency_ms['p95'])}"),
        (
            "first words p50 / p95",
            f"{_ms(s.first_words_ms['p50'])} / {_ms(s.first_words_ms['p95'])}",
        ),
        ("first draft set aside", rate_text(s.redrafted)),
        (
            "first kept words p50 / p95",
            f"{_ms(s.final_words_ms['p50'])} / {_ms(s.final_words_ms['p95'])}",
        ),
    ]


def row_dict(row: Row) -> dict[str, Any]:
    """One question's verdict as JSON."""
    q, o = row.question, row.outcome
    return {
        "id": q.id,
        "question": q.question,
        "answerable": q.answerable,
        "ok": row.ok,
        "failed": list(row.failed),
        "answer": o.answer,
        "abstained": o.abstained,
        "cited_refs": list(o.cited_refs),
        "cited_paths": list(o.cited_paths),
        "gold": list(q.gold),
        "briefed": list(o.briefed),
        "gold_at": row.gold_at,
        "latency_ms": round(o.latency_ms, 1),
        "first_words_ms": round(o.first_words_ms, 1),
        "redrafted": o.redrafted,
        "final_words_ms": round(o.final_words_ms, 1),
        "error": o.error,
    }


def rate_dict(rate: Rate) -> dict[str, Any]:
    """A rate as JSON: value (null when nothing was counted), hits and total."""
    return {"value": rate.value, "hits": rate.hits, "total": rate.total}


def report_dict(summary: Summary, rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    """The whole run as JSON (``--json``)."""
    return {
        **meta,
        "questions": summary.questions,
        "answerable": summary.answerable,
        "unanswerable": summary.unanswerable,
        "errors": summary.errors,
        "metrics": {
            "cited_correct": rate_dict(summary.cited_correct),
            "citation_precision": rate_dict(summary.citation_precision),
            "abstention": rate_dict(summary.abstention),
            "false_abstention": rate_dict(summary.false_abstention),
            "gold_briefed": rate_dict(summary.gold_briefed),
            "gold_leading": rate_dict(summary.gold_leading),
            "latency_ms": summary.latency_ms,
            "first_words_ms": summary.first_words_ms,
            "redrafted": rate_dict(summary.redrafted),
            "final_words_ms": summary.final_words_ms,
        },
        "rows": [row_dict(r) for r in rows],
    }


def render_text(summary: Summary, rows: Sequence[Row], meta: dict[str, Any]) -> str:
    """The summary, then one block per failed question."""
    head = f"{summary.questions} questions ({summary.answerable} answerable, "
    head += f"{summary.unanswerable} unanswerable"
    head += f", {summary.errors} failed to run)" if summary.errors else ")"
    who = ", ".join(str(meta[k]) for k in ("persona", "model") if meta.get(k))
    if meta.get("prefill_tokens_per_second"):
        who += f", prefill {meta['prefill_tokens_per_second']:.0f} tokens/s at load"
    lines = [head + (f" — {who}" if who else ""), ""]
    lines += [f"  {label:<32} {value}" for label, value in metric_lines(summary)]
    failures = [r for r in rows if not r.ok]
    if failures:
        lines += ["", f"Failed ({len(failures)}):"]
    for r in failures:
        o = r.outcome
        lines.append(f"\n  [{r.question.id}] {r.question.question}")
        lines.append(f"    failed: {'; '.join(r.failed)}")
        if not o.error:
            lines.append(f"    answer: {excerpt(o.answer) or '(empty)'}")
            lines.append(f"    cited:  {', '.join(o.cited_refs) or '(none)'}")
            if r.question.gold:
                where = f" ({_gold_at(r)})" if r.outcome.briefed else ""
                lines.append(f"    gold:   {', '.join(r.question.gold)}{where}")
            redraft = f", final draft from {_ms(o.final_words_ms)}" if o.redrafted else ""
            lines.append(
                f"    time:   {_ms(o.latency_ms)} (first words {_ms(o.first_words_ms)}{redraft})"
            )
    return "\n".join(lines)


def _gold_at(row: Row) -> str:
    """Where retrieval put the gold note, for a reader telling retrieval misses from reading
    misses."""
    if not row.question.answerable or not row.outcome.briefed:
        return ""
    if row.gold_at is None:
        return "not briefed"
    return f"source [{row.gold_at}] of {len(row.outcome.briefed)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(summary: Summary, rows: Sequence[Row], meta: dict[str, Any]) -> str:
    """The report ``--out`` writes: metrics, then every question, failures first."""
    lines = ["# memex eval", ""]
    lines += [f"- {k}: `{v}`" for k, v in meta.items() if v not in ("", None)]
    lines += [
        f"- questions: {summary.questions} ({summary.answerable} answerable, "
        f"{summary.unanswerable} unanswerable, {summary.errors} failed to run)",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    lines += [f"| {label} | {value} |" for label, value in metric_lines(summary)]
    lines += [
        "",
        "## Questions",
        "",
        "| id | question | verdict | answer | cited | gold briefed | latency | first words |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r.ok):
        o = r.outcome
        verdict = "ok" if r.ok else "; ".join(r.failed)
        answer = "(abstained) " if o.abstained else ""
        lines.append(
            "| "
            + " | ".join(
                _cell(c)
                for c in (
                    r.question.id,
                    r.question.question,
                    verdict,
                    answer + excerpt(o.answer, 120),
                    ", ".join(o.cited_refs),
                    _gold_at(r),
                    _ms(o.latency_ms) if not o.error else "",
                    _ms(o.first_words_ms) if not o.error else "",
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


# Replay.


def change_dict(c: Change) -> dict[str, Any]:
    """One replayed ask as JSON."""
    return {
        "turn_id": c.logged.turn_id,
        "question": c.logged.question,
        "persona": c.logged.persona,
        "logged_at": c.logged.created_at,
        "changed": c.changed,
        "baseline": c.baseline,
        "answer_changed": c.answer_changed,
        "abstention_flipped": c.abstention_flipped,
        "refs_added": list(c.refs_added),
        "refs_removed": list(c.refs_removed),
        "before": {
            "answer": c.logged.answer,
            "abstained": c.logged.abstained,
            "cited_refs": list(c.logged.cited_refs),
        },
        "after": {k: v for k, v in asdict(c.now).items() if k != "cited_refs"}
        | {"cited_refs": list(c.now.cited_refs)},
    }


def replay_counts(changes: Sequence[Change]) -> dict[str, int]:
    """How many replayed asks changed, and how."""
    return {
        "replayed": len(changes),
        "changed": sum(c.changed for c in changes),
        "answer_changed": sum(c.answer_changed for c in changes),
        "abstention_flipped": sum(c.abstention_flipped for c in changes),
        "refs_changed": sum(bool(c.refs_added or c.refs_removed) for c in changes),
        "no_baseline": sum(not c.baseline for c in changes),
        "errors": sum(bool(c.now.error) for c in changes),
    }


def render_replay(changes: Sequence[Change]) -> str:
    """Counts, then a before/after diff of every changed ask."""
    n = replay_counts(changes)
    lines = [
        f"{n['replayed']} logged asks replayed: {n['changed']} changed "
        f"({n['answer_changed']} answer text, {n['abstention_flipped']} abstention flipped, "
        f"{n['refs_changed']} cited refs, {n['errors']} failed)"
    ]
    if n["no_baseline"]:
        lines.append(
            f"{n['no_baseline']} were logged before answers were kept: only abstention compared"
        )
    for c in changes:
        if not c.changed:
            continue
        lines.append(f"\n  [{c.logged.turn_id[:8]}] {c.logged.question}  ({c.logged.persona})")
        if c.now.error:
            lines.append(f"    error: {c.now.error}")
            continue
        if c.abstention_flipped:
            was, now = (
                ("abstained", "answered") if c.logged.abstained else ("answered", "abstained")
            )
            lines.append(f"    {was} → {now}")
        if c.answer_changed:
            lines.append(f"    - {excerpt(c.logged.answer)}")
            lines.append(f"    + {excerpt(c.now.answer)}")
        if c.refs_removed:
            lines.append(f"    cited no longer: {', '.join(c.refs_removed)}")
        if c.refs_added:
            lines.append(f"    cited now: {', '.join(c.refs_added)}")
    return "\n".join(lines)

"""The briefing's shape against what a right answer needs (issue 35): no model, seconds.

For every answerable question of a `memex eval` file, searches the running stack's memory as an
ask does, builds the numbered briefing with each excerpt setting, and counts the questions whose
facts all appear in what the model is shown of a gold note (its excerpt; headers aside), and
whose gold note is briefed at all. A briefing that shows the gold note but cuts the sentence
that answers (the wrong section of a long note) loses the first count and keeps the second.

    memex up && memex index ../shared/eval/til-vault --tenant til
    .venv/bin/python benchmarks/bench_briefing.py benchmarks/eval/til.jsonl --tenant til

Prints, per setting, facts shown / gold briefed / questions and the prompt tokens of the
briefing (median), so a setting is read as what it shows for what it costs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path

from memex.cli.eval.matching import contains, is_gold
from memex.cli.eval.questions import parse_questions
from memex.orchestrator.answer.sources import estimate_tokens, render_all, select
from memex.orchestrator.ports import SearchSpec
from memex.orchestrator.wire.clients import GrpcMemory

# (excerpt_chars, lead_excerpt_chars, briefing tokens): today's default first.
SETTINGS = [
    (400, 800, 1000),
    (400, 800, 700),
    (400, 1600, 1000),
    (600, 1200, 1000),
    (600, 1200, 800),
    (600, 1200, 700),
    (800, 1600, 1000),
    (300, 600, 700),
]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--retrieval", default="127.0.0.1:50052")
    parser.add_argument("--limit", type=int, default=8, help="sources at most (ask's default)")
    args = parser.parse_args()
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [q for q in parse_questions(lines, str(args.questions)) if q.answerable]
    memory = GrpcMemory(args.retrieval)
    try:
        found = [
            await memory.search(args.tenant, SearchSpec(query=q.question, k=20)) for q in questions
        ]
    finally:
        await memory.close()
    print(f"{len(questions)} answerable questions, tenant {args.tenant!r}")
    print("excerpt  lead  budget | facts shown | gold briefed | tokens p50")
    for excerpt, lead, budget in SETTINGS:
        shown = briefed = 0
        tokens = []
        for question, items in zip(questions, found, strict=True):
            sources = select(
                items,
                question.question,
                token_budget=budget,
                excerpt_chars=excerpt,
                lead_excerpt_chars=lead,
                limit=args.limit,
            )
            tokens.append(estimate_tokens(render_all(sources)))
            gold = [s for s in sources if is_gold(s.ref, question.gold, s.item.path)]
            briefed += bool(gold)
            text = "\n".join(s.excerpt for s in gold)
            shown += bool(gold) and all(
                any(contains(text, alt) for alt in fact) for fact in question.facts
            )
        print(
            f"{excerpt:7d} {lead:5d} {budget:7d} | {shown:4d}/{len(questions)}    "
            f"| {briefed:4d}/{len(questions)}    | {statistics.median(tokens):.0f}"
        )


if __name__ == "__main__":
    asyncio.run(main())

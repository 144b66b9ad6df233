"""Searching a compound question's parts instead of planning (issue 35): no model, seconds.

A compound question ("What port does it listen on, and how do I run it on another?") earns the
plan hop, a model call of about 6 s on 2 cores before any source is read. Every plan also
searches the question itself. This measures what the parts' own searches would add in place of
the model's: for every answerable compound question of a `memex eval` file, the running stack's
memory is searched as an ask searches (the default ask persona's channels and chunks, the
record collections the model's searches cover), and the ranked lists are fused as an ask fuses
its steps (reciprocal rank fusion, k 60). It counts the questions whose gold note is among the
sources an ask briefs (the first ``--limit``) and among the first three (about what a 2-core
CPU's first pass reads), for:

- ``question``: the question's own search alone;
- ``question+parts``: that search and one search per part (``question_parts``), fused;
- ``question+plan``: that search and the steps of the plan the model made for the question in
  an earlier run, read from the audit log (``--audit-db``, the orchestrator's state database),
  as the ask runs them now; questions with no logged plan are left out of this count.

    memex up && memex index ../shared/eval/til-vault --tenant til
    .venv/bin/python benchmarks/bench_parts_search.py benchmarks/eval/til.jsonl --tenant til
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
from pathlib import Path

from memex.cli.eval.matching import is_gold
from memex.cli.eval.questions import Question, parse_questions
from memex.orchestrator.answer.question_parts import question_parts
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.memory.items import ShownItem, note_path
from memex.orchestrator.turn.fusion import rrf
from memex.orchestrator.turn.persona import load_personas
from memex.orchestrator.turn.pipeline import Retriever
from memex.orchestrator.turn.planner import parse_plan
from memex.orchestrator.wire.clients import GrpcMemory

LEADING = 3


def gold_rank(items: list[ShownItem], question: Question) -> int | None:
    """The 1-based rank of the first item from a gold note, counting notes once."""
    notes: list[str] = []
    for item in items:
        key = item.episode_id or item.item_id
        if key in notes:
            continue
        notes.append(key)
        if is_gold(f"[[{item.title}]]", question.gold, note_path(item)):
            return len(notes)
    return None


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--retrieval", default="127.0.0.1:50052")
    parser.add_argument("--limit", type=int, default=8, help="sources briefed (ask's default)")
    parser.add_argument("--audit-db", type=Path, help="state.db whose llm_log holds plans")
    args = parser.parse_args()
    plans: dict[str, str] = {}
    if args.audit_db:
        with sqlite3.connect(args.audit_db) as db:
            for prompt, response in db.execute(
                "SELECT prompt, response FROM llm_log WHERE purpose = 'ask_plan' "
                "ORDER BY created_at"
            ):
                plans[prompt.rsplit("Question: ", 1)[-1].strip()] = response
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    compound = [
        q
        for q in parse_questions(lines, str(args.questions))
        if q.answerable and len(question_parts(q.question)) > 1
    ]
    settings = OrchestratorSettings()
    persona = load_personas(settings.personas_dir).get("", "ask")
    memory = GrpcMemory(args.retrieval)
    retriever = Retriever(memory, settings.rrf_k, settings.search_record_collections)
    counts = {"question": [0, 0], "question+parts": [0, 0], "question+plan": [0, 0]}
    planned = 0
    try:
        for q in compound:
            whole = await retriever.search(args.tenant, persona, q.question)
            parts = [
                await retriever.search(args.tenant, persona, part)
                for part in question_parts(q.question)
            ]
            variants = [("question", [whole]), ("question+parts", [whole, *parts])]
            if q.question in plans:
                planned += 1
                steps = parse_plan(plans[q.question], q.question).steps
                variants.append(
                    ("question+plan", await retriever.run_steps(args.tenant, steps, persona))
                )
            ranks: dict[str, int | None] = {}
            for name, lists in variants:
                fused = rrf(lists, settings.rrf_k)[: args.limit]
                rank = gold_rank(fused, q)
                ranks[name] = rank
                counts[name][0] += rank is not None
                counts[name][1] += rank is not None and rank <= LEADING
            if len(set(ranks.values())) > 1:
                print(f"  {q.id}: gold at " + ", ".join(f"{k} {v}" for k, v in ranks.items()))
    finally:
        await memory.close()
    print(f"{len(compound)} answerable compound questions, tenant {args.tenant!r}")
    print(f"{planned} of them with a logged plan")
    for name, (briefed, leading) in counts.items():
        print(f"{name:>15}: gold briefed {briefed}, in the first {LEADING}: {leading}")


if __name__ == "__main__":
    asyncio.run(main())

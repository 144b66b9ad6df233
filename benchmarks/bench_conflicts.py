"""How often the contradiction check (docs/contradictions.md) speaks: no model, no stack, seconds.

For each answerable question of a `memex eval` file, the briefing is the gold notes and the notes
sharing most terms with the question (8 in all), and the claim is the gold notes' sentence with a
typed figure that shares most terms with the question: what a right answer states. Prints the
questions flagged, and how many were. Then, looser, each sentence of every note with a typed
figure as a claim of its own (no question), against the 8 notes sharing most terms with it.

    .venv/bin/python benchmarks/bench_conflicts.py demo/vault demo/eval/questions.jsonl
    .venv/bin/python benchmarks/bench_conflicts.py \
        ../shared/eval/til-vault benchmarks/eval/til.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from memex.orchestrator.answer import conflicts
from memex.orchestrator.answer.lexical import segments, terms
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.memory.items import ShownItem

BRIEFED = 8
_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_DATE = re.compile(r"^date:\s*(\d{4}-\d{2}-\d{2})", re.M)


def load(vault: Path) -> dict[str, Source]:
    """Each note as one source (its first 3,000 characters), by title and by vault path."""
    notes: dict[str, Source] = {}
    for number, path in enumerate(sorted(vault.rglob("*.md")), 1):
        raw = path.read_text(errors="replace")
        date = _DATE.search(raw)
        body = _FRONT_MATTER.sub("", raw)[:3000]
        item = ShownItem(
            f"c{number}",
            body,
            f"[[{path.stem}]]",
            f"ep{number}",
            path.stem,
            date[1] if date else "",
            path=str(path.relative_to(vault)),
        )
        source = Source(number, item, body, tuple(segments(body)))
        notes[path.stem] = notes[str(path.relative_to(vault))] = source
    return notes


def nearest(words: set[str], sources: list[Source], leave_out: list[Source]) -> list[Source]:
    """The sources sharing most terms with ``words``, ``leave_out`` aside."""
    held = [(s, set(terms(f"{s.item.title} {s.shown}"))) for s in sources if s not in leave_out]
    return [s for s, t in sorted(held, key=lambda pair: -len(words & pair[1]))]


def questions(path: Path, notes: dict[str, Source]) -> tuple[int, list[str]]:
    """Questions with a figure claim, and a line for each flagged."""
    sources = list({id(s): s for s in notes.values()}.values())
    asked, flagged = 0, []
    for line in path.read_text().splitlines():
        question = json.loads(line)
        gold = [notes[g] for g in question.get("gold", []) if g in notes]
        if not question.get("answerable") or not gold:
            continue
        wanted = set(terms(question["question"]))
        claims = [
            (len(wanted & set(terms(s.text))), s.text, g)
            for g in gold
            for s in segments(g.shown)
            if conflicts.values(s.text)
        ]
        if not claims or max(claims, key=lambda c: c[0])[0] == 0:
            continue
        _, claim, used = max(claims, key=lambda c: c[0])
        asked += 1
        briefing = (gold + nearest(wanted, sources, gold))[:BRIEFED]
        for d in conflicts.against(claim, claim, question["question"], used, briefing):
            flagged.append(f"{question['question']}\n  {_side(d.used, d.used_sentence)}")
            flagged.append(f"  {_side(d.other, d.other_sentence)}")
    return asked, flagged


def sentences(notes: dict[str, Source]) -> tuple[int, list[str]]:
    """Every sentence with a typed figure as its own claim: how often the check would speak."""
    sources = list({id(s): s for s in notes.values()}.values())
    claims, flagged = 0, []
    for source in sources:
        for sentence in segments(source.shown):
            if not conflicts.values(sentence.text):
                continue
            claims += 1
            near = nearest(set(terms(sentence.text)), sources, [source])[:BRIEFED]
            for d in conflicts.against(sentence.text, sentence.text, "", source, near)[:1]:
                flagged.append(
                    f"{_side(d.used, d.used_sentence)}\n  {_side(d.other, d.other_sentence)}"
                )
    return claims, flagged


def _side(source: Source, sentence: str) -> str:
    return f"{source.item.title}: {sentence[:140]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("questions", type=Path)
    args = parser.parse_args()
    notes = load(args.vault)
    asked, flagged = questions(args.questions, notes)
    print("\n".join(flagged))
    print(f"questions with a figure claim: {asked}; flagged: {len(flagged) // 2}")
    claims, loose = sentences(notes)
    print("\n".join(loose))
    print(f"sentences with a typed figure: {claims}; flagged: {len(loose)}")


if __name__ == "__main__":
    main()

"""`memex eval`'s question files: parsing and checking them (every bad line named), and the text
of questions given by a BEIR query id. Pure functions; exact definitions are in docs/eval.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# A fact is a list of alternative phrasings; any one of them counts.
Fact = tuple[str, ...]
_KNOWN_KEYS = {"id", "question", "query_id", "gold", "facts", "answerable", "note"}


@dataclass(frozen=True)
class Question:
    """One line of a question file, with the question text resolved."""

    id: str
    question: str
    answerable: bool
    gold: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    query_id: str = ""
    line: int = 0


class QuestionFileError(ValueError):
    """A question file that does not parse; ``problems`` are (line number, what is wrong)."""

    def __init__(self, path: str, problems: Sequence[tuple[int, str]]) -> None:
        self.problems = list(problems)
        listed = "\n".join(f"  {path}:{n}: {what}" for n, what in self.problems)
        super().__init__(f"{path}: {len(self.problems)} bad line(s):\n{listed}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def _parse_line(obj: Any) -> tuple[Question | None, list[str]]:
    """A question from one decoded line (query-id questions keep an empty text), or why not."""
    if not isinstance(obj, dict):
        return None, ["not a JSON object"]
    problems = [f"unknown key {k!r}" for k in sorted(set(obj) - _KNOWN_KEYS)]
    qid = obj.get("id")
    if not isinstance(qid, str | int) or isinstance(qid, bool) or not str(qid).strip():
        problems.append('"id" must be a non-empty string')
    text, query_id = obj.get("question"), obj.get("query_id")
    if (text is None) == (query_id is None):
        problems.append('give exactly one of "question" (text) and "query_id"')
    elif text is not None and (not isinstance(text, str) or not text.strip()):
        problems.append('"question" must be a non-empty string')
    elif query_id is not None and (not isinstance(query_id, str | int) or not str(query_id)):
        problems.append('"query_id" must be a string')
    answerable = obj.get("answerable")
    if not isinstance(answerable, bool):
        problems.append('"answerable" must be true or false')
    gold, facts = obj.get("gold", []), obj.get("facts", [])
    if not _strings(gold):
        problems.append('"gold" must be a list of note titles (or collection:id refs)')
    if not isinstance(facts, list) or not all(
        (isinstance(f, str) and f.strip()) or (_strings(f) and f) for f in facts
    ):
        problems.append('"facts" must be a list of strings or of lists of alternative strings')
    if answerable is True and not gold and not problems:
        problems.append('an answerable question needs "gold" (the notes that hold the answer)')
    if answerable is False and (gold or facts):
        problems.append('an unanswerable question has no "gold" or "facts"')
    if problems:
        return None, problems
    return Question(
        id=str(qid),
        question=text.strip() if isinstance(text, str) else "",
        answerable=bool(answerable),
        gold=tuple(gold),
        facts=tuple((f,) if isinstance(f, str) else tuple(f) for f in facts),
        query_id="" if query_id is None else str(query_id),
    ), []


def parse_questions(lines: Iterable[str], path: str = "<questions>") -> list[Question]:
    """Questions from JSON Lines (blank lines and ``#`` comments skipped); raises
    QuestionFileError listing every bad line, duplicate ids included."""
    questions: list[Question] = []
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append((number, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        question, why = _parse_line(obj)
        problems.extend((number, w) for w in why)
        if question is None:
            continue
        if question.id in seen:
            problems.append(
                (number, f"duplicate id {question.id!r} (first on line {seen[question.id]})")
            )
            continue
        seen[question.id] = number
        questions.append(replace(question, line=number))
    if problems:
        raise QuestionFileError(path, problems)
    if not questions:
        raise QuestionFileError(path, [(0, "no questions")])
    return questions


def needs_queries(questions: Sequence[Question]) -> bool:
    """Whether any question names a query id whose text must be looked up."""
    return any(q.query_id and not q.question for q in questions)


def load_queries(path: Path) -> dict[str, str]:
    """A BEIR queries.jsonl as {id: text}."""
    queries = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                query = json.loads(line)
                queries[str(query["_id"])] = str(query["text"])
    return queries


def claim_question(claim: str) -> str:
    """How a scientific claim is asked."""
    claim = claim.strip().rstrip(".")
    return f"Is it true that {claim[:1].lower() + claim[1:] if claim[1:2].islower() else claim}?"


def resolve_queries(
    questions: Sequence[Question], queries: Mapping[str, str], path: str = "<questions>"
) -> list[Question]:
    """Fills in the text of query-id questions; raises QuestionFileError for unknown ids."""
    resolved, problems = [], []
    for q in questions:
        if q.query_id and not q.question:
            if q.query_id not in queries:
                problems.append((q.line, f"query_id {q.query_id!r} is not in the queries file"))
                continue
            q = replace(q, question=claim_question(queries[q.query_id]))
        resolved.append(q)
    if problems:
        raise QuestionFileError(path, problems)
    return resolved

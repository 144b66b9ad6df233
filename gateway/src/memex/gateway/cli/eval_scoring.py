"""`memex eval` without the transport: question files, fact and citation matching, the metrics,
and the replay diff. Pure functions; the command (``eval_command``) feeds them what the stack
answered. Exact definitions are in docs/eval.md.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

# A fact is a list of alternative phrasings; any one of them counts.
Fact = tuple[str, ...]

# Sources counted as "leading" by the retrieval metric: about what the ask's first pass reads on
# a 2-core CPU (docs/orchestrator.md), so a gold note below them is answered only by widening.
LEADING = 3
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


# Matching.

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTHS = {m[:3]: i for i, m in enumerate(_MONTH_NAMES, start=1)}
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_SMALL_NUMBERS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_SMALL_NUMBERS)} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "hundred": "100",
}


def _month(name: str) -> int:
    return _MONTHS[name[:3]]


def _iso(year: str, month: int, day: str = "") -> str:
    return f"{year}-{month:02d}" + (f"-{int(day):02d}" if day else "")


def _dates(text: str) -> str:
    """Dates written any common way become ISO: 2026-06-03, 06-03 without a year, 2026-06
    without a day; so '3rd June 2026', 'June 3, 2026' and '2026-06-03' all read the same."""
    text = re.sub(
        rf"\b{_DAY}(?: of)? {_MONTH},? (\d{{4}})\b",
        lambda m: _iso(m[3], _month(m[2]), m[1]),
        text,
    )
    text = re.sub(
        rf"\b{_MONTH} {_DAY},? (\d{{4}})\b", lambda m: _iso(m[3], _month(m[1]), m[2]), text
    )
    text = re.sub(
        r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b",  # the vault is British: day first
        lambda m: _iso(m[3], int(m[2]), m[1]) if 1 <= int(m[2]) <= 12 else m[0],
        text,
    )
    text = re.sub(
        rf"\b{_DAY}(?: of)? {_MONTH}\b", lambda m: f"{_month(m[2]):02d}-{int(m[1]):02d}", text
    )
    text = re.sub(rf"\b{_MONTH} {_DAY}\b", lambda m: f"{_month(m[1]):02d}-{int(m[2]):02d}", text)
    return re.sub(rf"\b{_MONTH} (\d{{4}})\b", lambda m: _iso(m[2], _month(m[1])), text)


def normalize(text: str) -> str:
    """Case-folded, whitespace-squashed text with numbers, dates and currency written one way:
    '£1,030.00' → '1030', 'nineteen' → '19', 'June 3rd, 2026' → '2026-06-03'."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DASHES).translate(_QUOTES)
    text = re.sub(r"\s+", " ", text).strip()
    text = _dates(text)
    text = re.sub(r"(?:[£$€]|\b(?:gbp|usd|eur))\s?(?=\d)", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = re.sub(r"(?<=\d)\.0+(?!\d)", "", text)
    return re.sub(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", lambda m: _NUMBER_WORDS[m[1]], text)


def _bounded(haystack: str, start: int, end: int, needle: str) -> bool:
    """A match that does not cut into a word or number: '48' is not in '480' nor in '48.5'."""
    before = haystack[start - 1] if start else " "
    after = haystack[end] if end < len(haystack) else " "
    if needle[0].isalnum() and before.isalnum():
        return False
    if needle[-1].isalnum() and after.isalnum():
        return False
    return not (needle[-1].isdigit() and after in ".," and haystack[end + 1 : end + 2].isdigit())


def contains(answer: str, phrase: str) -> bool:
    """Whether ``answer`` states ``phrase`` (both normalized; whole words and numbers only)."""
    haystack, needle = normalize(answer), normalize(phrase)
    if not needle:
        return True
    start = haystack.find(needle)
    while start != -1:
        if _bounded(haystack, start, start + len(needle), needle):
            return True
        start = haystack.find(needle, start + 1)
    return False


def missing_facts(answer: str, facts: Sequence[Fact]) -> list[str]:
    """The facts the answer does not state (each named by its first alternative)."""
    return [f[0] for f in facts if not any(contains(answer, alt) for alt in f)]


def ref_key(ref: str) -> str:
    """A citation ref or gold title, compared loosely: '[[Flat Deposit Agreement#Terms|the deal]]'
    and 'flat deposit agreement' are the same note, and so is a gold note named by its file,
    'legal/Flat Deposit Agreement.md' (a note's title is its file name unless its frontmatter
    says otherwise); 'inbox:x' stays a record ref."""
    ref = unicodedata.normalize("NFKC", ref).strip()
    if ref.startswith("[[") and ref.endswith("]]"):
        ref = re.split(r"[#|]", ref[2:-2], maxsplit=1)[0]
    if ref.casefold().endswith(".md"):
        ref = ref[:-3].rsplit("/", 1)[-1]
    return re.sub(r"\s+", " ", ref.translate(_DASHES)).strip().casefold()


def is_gold(ref: str, gold: Iterable[str], path: str = "") -> bool:
    """Whether a citation names one of the gold notes, by its title or, when the stack gave it,
    by its note's file ('legal/Flat Deposit.md' is gold 'Flat Deposit' whatever its title)."""
    keys = {ref_key(g) for g in gold}
    return ref_key(ref) in keys or (bool(path) and ref_key(path) in keys)


# Scoring.


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


# Replay (regression) mode.


@dataclass(frozen=True)
class Logged:
    """An ask as telemetry logged it."""

    turn_id: str
    question: str
    persona: str
    answer: str
    abstained: bool
    cited_refs: tuple[str, ...]
    created_at: str = ""


@dataclass(frozen=True)
class Change:
    """How a replayed answer differs from the logged one; ``baseline`` False when the log kept no
    answer (asks logged before answers were kept), so only abstention is compared."""

    logged: Logged
    now: Outcome
    baseline: bool
    answer_changed: bool
    abstention_flipped: bool
    refs_added: tuple[str, ...]
    refs_removed: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(
            self.now.error
            or self.answer_changed
            or self.abstention_flipped
            or self.refs_added
            or self.refs_removed
        )


def squash(text: str) -> str:
    """Whitespace squashed to single spaces, ends trimmed (case and wording kept)."""
    return re.sub(r"\s+", " ", text).strip()


def compare(logged: Logged, now: Outcome) -> Change:
    """The difference between a logged answer and the same question asked again."""
    baseline = bool(logged.answer)
    if now.error:
        return Change(logged, now, baseline, False, False, (), ())
    before = {ref_key(r): r for r in logged.cited_refs}
    after = {ref_key(r): r for r in now.cited_refs}
    return Change(
        logged,
        now,
        baseline,
        answer_changed=baseline and squash(logged.answer) != squash(now.answer),
        abstention_flipped=logged.abstained != now.abstained,
        refs_added=tuple(after[k] for k in after if k not in before) if baseline else (),
        refs_removed=tuple(before[k] for k in before if k not in after) if baseline else (),
    )


def replay_set(logged: Sequence[Logged], limit: int = 0) -> list[Logged]:
    """The asks to replay: newest first, one per (question, persona), at most ``limit`` (0: all)."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for ask in logged:
        key = (squash(ask.question).casefold(), ask.persona)
        if key not in seen:
            seen.add(key)
            chosen.append(ask)
    return chosen[:limit] if limit else chosen

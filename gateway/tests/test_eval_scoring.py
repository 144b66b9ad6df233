"""`memex eval`'s scoring without a stack: question files, matching, metrics and replay diffs."""

from __future__ import annotations

import json

import pytest

from memex.cli.eval import report as eval_report
from memex.cli.eval.matching import contains, is_gold, missing_facts, normalize, ref_key
from memex.cli.eval.questions import (
    Question,
    QuestionFileError,
    parse_questions,
    resolve_queries,
)
from memex.cli.eval.replay import Logged, compare, replay_set
from memex.cli.eval.scoring import Outcome, judge, percentile, summarize

ALLOTMENT = Question(
    "allotment-cost", "What does the allotment cost?", True, ("Allotment Tenancy Agreement",),
    (("£48",), ("a year", "per year", "annual", "annually")),
)  # fmt: skip
UNKNOWN = Question("blood-type", "What is my blood type?", False)


def lines(*objects: object) -> list[str]:
    return [o if isinstance(o, str) else json.dumps(o) for o in objects]


# Question files.


def test_a_good_file_parses_with_line_numbers_and_fact_alternatives() -> None:
    questions = parse_questions(
        lines(
            {
                "id": "a",
                "question": "Cost?",
                "gold": ["Allotment"],
                "facts": ["£48", ["yr", "year"]],
                "answerable": True,
            },
            "",
            "# a comment",
            {"id": 7, "question": "Blood type?", "answerable": False},
            {"id": "s1", "query_id": "42", "gold": ["123"], "answerable": True},
        )
    )
    a, b, c = questions
    assert (a.line, a.facts, a.gold) == (1, (("£48",), ("yr", "year")), ("Allotment",))
    assert (b.id, b.line, b.answerable, b.gold, b.facts) == ("7", 4, False, (), ())
    assert (c.query_id, c.question, c.facts) == ("42", "", ())


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ({"question": "q?", "answerable": False}, '"id"'),
        ({"id": "x", "answerable": False}, 'exactly one of "question"'),
        ({"id": "x", "question": "q", "query_id": "1", "answerable": False}, "exactly one"),
        ({"id": "x", "question": "  ", "answerable": False}, '"question" must be'),
        ({"id": "x", "question": "q"}, '"answerable" must be'),
        ({"id": "x", "question": "q", "answerable": "yes"}, '"answerable" must be'),
        ({"id": "x", "question": "q", "answerable": True}, 'needs "gold"'),
        ({"id": "x", "question": "q", "answerable": True, "gold": "Note"}, '"gold" must be'),
        ({"id": "x", "question": "q", "answerable": True, "gold": ["N"], "facts": [3]}, '"facts"'),
        ({"id": "x", "question": "q", "answerable": True, "gold": ["N"], "facts": [[]]}, '"facts"'),
        ({"id": "x", "question": "q", "answerable": False, "gold": ["N"]}, "unanswerable"),
        ({"id": "x", "question": "q", "answerable": False, "gold2": []}, "unknown key 'gold2'"),
    ],
)
def test_bad_lines_are_reported_with_their_line_number(line: object, message: str) -> None:
    with pytest.raises(QuestionFileError) as failed:
        parse_questions(
            lines({"id": "ok", "question": "fine?", "answerable": False}, line), "q.jsonl"
        )
    assert failed.value.problems[0][0] == 2
    assert message in failed.value.problems[0][1]
    assert "q.jsonl:2:" in str(failed.value)


def test_every_bad_line_is_listed_and_duplicates_are_bad() -> None:
    with pytest.raises(QuestionFileError) as failed:
        parse_questions(
            lines(
                {"id": "a", "question": "q", "answerable": False},
                "{oops",
                {"id": "a", "question": "again", "answerable": False},
            )
        )
    assert [n for n, _ in failed.value.problems] == [2, 3]
    assert "duplicate id 'a' (first on line 1)" in failed.value.problems[1][1]
    with pytest.raises(QuestionFileError, match="no questions"):
        parse_questions(["", "# only a comment"])


def test_query_ids_resolve_to_claims_and_unknown_ids_are_bad() -> None:
    [q] = parse_questions(lines({"id": "s", "query_id": 4, "gold": ["9"], "answerable": True}))
    [asked] = resolve_queries([q], {"4": "Aspirin lowers fever."})
    assert asked.question == "Is it true that aspirin lowers fever?"
    [kept] = resolve_queries([q], {"4": "ALDH1 expression predicts outcome."})
    assert kept.question == "Is it true that ALDH1 expression predicts outcome?"
    with pytest.raises(QuestionFileError, match="query_id '4' is not in the queries file"):
        resolve_queries([q], {})


# Matching.


@pytest.mark.parametrize(
    ("answer", "fact"),
    [
        ("Graham agreed to return £1,030.", "£1,030"),
        ("He gave back £1030 of it", "£1,030"),
        ("1,030 pounds came back", "£1,030"),
        ("£1,030.00 in total", "£1030"),
        ("It costs £ 48 a year", "£48"),
        ("IT COSTS   £48\nA YEAR", "£48 a year"),
        ("It came back on 3 June 2026.", "3 June 2026"),
        ("It came back on June 3rd, 2026.", "3 June 2026"),
        ("It came back on 2026-06-03", "3 June 2026"),
        ("It came back on 03/06/2026", "2026-06-03"),
        ("the race was on 11 October 2026", "11 October"),
        ("the race was on the 11th of October", "October 11"),
        ("in March 2026 she", "March 2026"),
        ("it took nineteen days", "19 days"),
        ("seven of nine supervisors", "7 of 9"),
        ("Warden Retro \u2013 Sprint 14", "Warden Retro \u2014 Sprint 14"),
        ("Maya\u2019s sister", "Maya's sister"),
        ("finished in 2:04:37.", "2:04:37"),
        ("Plot 23B.", "plot 23b"),
    ],
)
def test_facts_match_however_numbers_dates_and_case_are_written(answer: str, fact: str) -> None:
    assert contains(answer, fact), (normalize(answer), normalize(fact))


@pytest.mark.parametrize(
    ("answer", "fact"),
    [
        ("It costs £480 a year", "£48"),
        ("It costs £48.50", "£48"),
        ("£1,150 deposit", "£1,030"),
        ("plot 123B", "23B"),
        ("on 13 June 2026", "3 June 2026"),
        ("June 3", "3 June 2026"),  # the year is part of the fact
        ("the yearly fee", "year"),
        ("", "£48"),
    ],
)
def test_facts_do_not_match_inside_other_numbers_or_words(answer: str, fact: str) -> None:
    assert not contains(answer, fact)


def test_missing_facts_names_each_fact_by_its_first_alternative() -> None:
    facts = (("£48",), ("a year", "annual"), ("23B",))
    assert missing_facts("£48, annual fee", facts) == ["23B"]
    assert missing_facts("nothing", ()) == []


def test_gold_titles_match_refs_case_insensitively_with_headings_and_aliases() -> None:
    gold = ["Flat Deposit Agreement", "inbox:inbox-chase-deposit"]
    assert is_gold("[[flat deposit agreement]]", gold)
    assert is_gold("[[Flat Deposit Agreement#What actually happened|the deal]]", gold)
    assert is_gold("inbox:inbox-chase-deposit", gold)
    assert not is_gold("[[Flat Deposit]]", gold)
    assert not is_gold("events:ev-1", gold)
    assert ref_key("[[Warden Retro — Sprint 14]]") == ref_key("warden retro - sprint 14")
    # A question file may name gold notes by their files.
    by_file = ["legal/Flat Deposit Agreement.md", "Moving Day.MD"]
    assert is_gold("[[Flat Deposit Agreement]]", by_file)
    assert is_gold("[[Moving Day#Van]]", by_file)
    assert not is_gold("[[legal]]", by_file)


def test_a_cited_note_matches_a_gold_file_by_its_path_whatever_its_title() -> None:
    # A note titled in its frontmatter ("Open day: bring jam") is still its file to a person who
    # names gold notes by file, and two notes may share a title; the stack gives each path.
    gold = ["journal/2025-07-19 — Allotment open day.md"]
    path = "journal/2025-07-19 — Allotment open day.md"
    assert not is_gold("[[Allotment open day: bring jam]]", gold)
    assert is_gold("[[Allotment open day: bring jam]]", gold, path)
    assert not is_gold("[[Allotment open day: bring jam]]", gold, "journal/Other.md")
    answer = Outcome(
        "Bring jam.",
        False,
        ("[[Meeting]]", "[[Meeting]]"),
        cited_paths=("work/Meeting.md", "home/Meeting.md"),
        briefed=("[[Meeting]]", "[[Meeting]]"),
        briefed_paths=("work/Meeting.md", "home/Meeting.md"),
    )
    meeting = Question("m", "What?", True, ("home/Meeting.md",), (("jam",),))
    row = judge(meeting, answer)
    assert (row.ok, row.citations, row.precise, row.gold_at) == (True, 2, 2, 1)


# Verdicts and metrics.


def test_an_answerable_question_needs_an_answer_every_fact_and_a_gold_citation() -> None:
    good = judge(ALLOTMENT, Outcome("£48 a year.", False, ("[[Allotment Tenancy Agreement]]",)))
    assert (good.ok, good.failed, good.citations, good.precise) == (True, (), 1, 1)
    vague = judge(ALLOTMENT, Outcome("It is cheap.", False, ("[[Allotment Plot 23B]]",)))
    assert vague.failed == ("missing fact: £48", "missing fact: a year", "no gold citation")
    assert (vague.citations, vague.precise) == (1, 0)
    abstained = judge(ALLOTMENT, Outcome("I don't know.", True, ("[[Allotment Plot 23B]]",)))
    assert (abstained.ok, abstained.failed, abstained.citations) == (False, ("abstained",), 0)
    repeated = judge(
        ALLOTMENT,
        Outcome("£48 annual", False, ("[[Allotment Tenancy Agreement]]",) * 2 + ("inbox:x",)),
    )
    assert (repeated.ok, repeated.citations, repeated.precise) == (True, 2, 1)


def test_an_unanswerable_question_must_be_abstained_and_its_citations_count_only_if_answered() -> (
    None
):
    right = judge(UNKNOWN, Outcome("Not in your notes.", True, ("[[GP]]",)))
    assert (right.ok, right.citations, right.precise) == (True, 0, 0)
    wrong = judge(UNKNOWN, Outcome("O negative.", False, ("[[GP]]", "[[Journal]]")))
    assert (wrong.ok, wrong.failed, wrong.citations, wrong.precise) == (
        False,
        ("answered (should abstain)",),
        2,
        0,
    )


def test_a_failed_ask_is_a_failure_with_its_error() -> None:
    row = judge(ALLOTMENT, Outcome(error="DEADLINE_EXCEEDED: too slow"))
    assert (row.ok, row.failed) == (False, ("error: DEADLINE_EXCEEDED: too slow",))


def test_percentiles_interpolate_between_ranks() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_summary_rates_follow_the_definitions() -> None:
    gold = ("[[Allotment Tenancy Agreement]]",)
    rows = [
        judge(ALLOTMENT, Outcome("£48 a year", False, gold, 1000, 200)),
        judge(ALLOTMENT, Outcome("£48 a year", False, ("[[Other]]", *gold), 3000, 400)),
        judge(ALLOTMENT, Outcome("no idea", True, (), 2000, 2000)),
        judge(ALLOTMENT, Outcome(error="INTERNAL: boom")),
        judge(UNKNOWN, Outcome("no idea", True, ("[[Other]]",), 4000, 100)),
        judge(UNKNOWN, Outcome("O negative", False, ("[[Other]]",), 5000, 300)),
    ]
    s = summarize(rows)
    assert (s.questions, s.answerable, s.unanswerable, s.errors) == (6, 4, 2, 1)
    # The second also cites a gold note, so it is correct; only its precision suffers.
    assert (s.cited_correct.hits, s.cited_correct.total) == (2, 4)
    assert (s.citation_precision.hits, s.citation_precision.total) == (2, 4)
    assert (s.abstention.hits, s.abstention.total) == (1, 2)
    assert (s.false_abstention.hits, s.false_abstention.total) == (1, 4)
    assert s.latency_ms == {"p50": 3000, "p95": pytest.approx(4800)}
    assert s.first_words_ms["p50"] == 300
    report = eval_report.report_dict(s, rows, {"persona": "analyst"})
    assert report["metrics"]["citation_precision"] == {"value": 0.5, "hits": 2, "total": 4}
    assert report["rows"][3]["error"] == "INTERNAL: boom"
    text = eval_report.render_text(s, rows, {"persona": "analyst", "model": "m"})
    assert "cited-correct (answerable)" in text and "[blood-type]" in text
    markdown = eval_report.render_markdown(s, rows, {"file": "q.jsonl"})
    assert markdown.startswith("# memex eval") and "| allotment-cost |" in markdown


def test_the_report_says_where_retrieval_put_the_gold_note() -> None:
    def briefed(*refs: str) -> Outcome:
        return Outcome("It is cheap.", False, ("[[Other]]",), 1000, 500, briefed=refs)

    rows = [
        judge(ALLOTMENT, briefed("[[Other]]", "[[allotment tenancy agreement]]")),
        judge(ALLOTMENT, briefed("[[A]]", "[[B]]", "[[C]]", "[[Allotment Tenancy Agreement]]")),
        judge(ALLOTMENT, briefed("[[A]]", "[[B]]")),
        judge(ALLOTMENT, Outcome("£48 a year", False, ())),  # an older server briefs nothing
        judge(UNKNOWN, Outcome("no", True, briefed=("[[A]]",))),
    ]
    assert [r.gold_at for r in rows] == [2, 4, None, None, None]
    s = summarize(rows)
    assert (s.gold_briefed.hits, s.gold_briefed.total) == (2, 3)
    assert (s.gold_leading.hits, s.gold_leading.total) == (1, 3)
    text = eval_report.render_text(s, rows, {})
    assert "source [2] of 2" in text and "not briefed" in text
    assert "gold note in sources [1]-[3]" in text
    report = eval_report.report_dict(s, rows, {})
    assert report["rows"][1]["gold_at"] == 4
    assert report["metrics"]["gold_briefed"] == {"value": 2 / 3, "hits": 2, "total": 3}
    assert "| source [4] of 4 |" in eval_report.render_markdown(s, rows, {})


def test_an_empty_rate_is_not_a_number() -> None:
    s = summarize([judge(UNKNOWN, Outcome("no", True))])
    assert s.cited_correct.value is None and s.citation_precision.value is None
    assert "n/a" in eval_report.render_text(s, [], {})


# Replay.


def logged(
    answer: str = "It is £48.", abstained: bool = False, refs: tuple[str, ...] = ("[[A]]",)
) -> Logged:
    return Logged("t1", "Cost?", "analyst", answer, abstained, refs)


def test_an_unchanged_answer_ignores_whitespace_and_ref_order_and_case() -> None:
    change = compare(
        logged(refs=("[[A]]", "[[B]]")), Outcome("It is\n £48. ", False, ("[[b]]", "[[A]]"))
    )
    assert not change.changed


def test_changes_in_text_abstention_and_refs_are_each_reported() -> None:
    change = compare(logged(), Outcome("I don't know.", True, ("[[B]]",)))
    assert change.changed and change.answer_changed and change.abstention_flipped
    assert (change.refs_added, change.refs_removed) == (("[[B]]",), ("[[A]]",))
    text = eval_report.render_replay(
        [change, compare(logged(), Outcome("It is £48.", False, ("[[A]]",)))]
    )
    assert text.startswith("2 logged asks replayed: 1 changed")
    assert "answered → abstained" in text and "- It is £48." in text and "+ I don't know." in text
    assert "cited no longer: [[A]]" in text and "cited now: [[B]]" in text


def test_asks_logged_before_answers_were_kept_compare_abstention_only() -> None:
    change = compare(logged(answer="", refs=()), Outcome("Now an answer", False, ("[[A]]",)))
    assert not change.baseline and not change.changed
    flipped = compare(logged(answer="", abstained=True, refs=()), Outcome("x", False, ()))
    assert flipped.changed and flipped.abstention_flipped
    assert eval_report.replay_counts([change, flipped])["no_baseline"] == 2


def test_a_failed_replay_counts_as_changed() -> None:
    change = compare(logged(), Outcome(error="INTERNAL: boom"))
    assert change.changed and "error: INTERNAL: boom" in eval_report.render_replay([change])


def test_replay_set_keeps_the_newest_of_each_question_per_persona() -> None:
    asks = [
        Logged("t3", "Cost?", "analyst", "new", False, ()),
        Logged("t2", "cost? ", "analyst", "old", False, ()),
        Logged("t1", "Cost?", "skeptic", "other", False, ()),
        Logged("t0", "When?", "analyst", "", False, ()),
    ]
    assert [a.turn_id for a in replay_set(asks)] == ["t3", "t1", "t0"]
    assert [a.turn_id for a in replay_set(asks, limit=2)] == ["t3", "t1"]

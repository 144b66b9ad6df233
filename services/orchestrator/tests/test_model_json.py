"""The model's JSON is read leniently: raw control characters inside strings are not failures;
and what a plan is completed with."""

from __future__ import annotations

from memex.orchestrator.answer.citations import parse_citations
from memex.orchestrator.turn.planner import Step, parse_plan


def test_a_plan_with_a_raw_newline_in_a_query_is_kept() -> None:
    plan = parse_plan('{"steps": [{"tool": "search_vault", "query": "deposit\nGraham"}]}', "q")
    assert not plan.fell_back
    assert plan.steps[1:] == (Step("search_vault", query="deposit\nGraham"),)


def test_a_citations_tail_with_a_raw_newline_is_read_as_json() -> None:
    [entry] = parse_citations('[{"episode": "ep-1", "quote": "line one\nline two"}]')
    assert entry["quote"] == "line one\nline two"


def test_every_plan_searches_the_question_first() -> None:
    lookups = (
        '{"steps": [{"tool": "query_records", "collection": "beliefs"}, {"tool": "list_inbox"}]}'
    )
    plan = parse_plan(lookups, "Who built the raised beds?")
    assert plan.steps == (
        Step("search_vault", query="Who built the raised beds?"),
        Step("query_records", collection="beliefs"),
        Step("list_inbox"),
    )
    searched = '{"steps": [{"tool": "list_inbox"}, {"tool": "search_vault", "query": "beds"}]}'
    assert parse_plan(searched, "q").steps == (
        Step("search_vault", query="q"),
        Step("list_inbox"),
        Step("search_vault", query="beds"),
    )

"""The model's JSON is read leniently: raw control characters inside strings are not failures."""

from __future__ import annotations

from memex.orchestrator.citations import parse_citations
from memex.orchestrator.planner import Step, parse_plan


def test_a_plan_with_a_raw_newline_in_a_query_is_kept() -> None:
    plan = parse_plan('{"steps": [{"tool": "search_vault", "query": "deposit\nGraham"}]}', "q")
    assert not plan.fell_back
    assert plan.steps == (Step("search_vault", query="deposit\nGraham"),)


def test_a_citations_tail_with_a_raw_newline_is_read_as_json() -> None:
    [entry] = parse_citations('[{"episode": "ep-1", "quote": "line one\nline two"}]')
    assert entry["quote"] == "line one\nline two"

"""Ask's stages before the answer (SPEC B1): the plan hop, which sees the question and never the
notes, and the searches it runs or falls back to; a persona's reframe and counter-evidence calls;
the dated search a question naming a day earns; the empty-memory answer and the top-n cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memex.orchestrator.answer.briefing import EMPTY_MEMORY_ANSWER

from .fakes import (
    ANSWER,
    GOOD,
    NOTES,
    PLAN,
    FakeMemory,
    ScriptedReasoner,
    make_orchestrator,
    reasoner,
)


async def test_questions_about_records_earn_the_plan_hop_which_sees_no_data(
    tmp_path: Path,
) -> None:
    plan = {"steps": [{"tool": "list_inbox"}, {"tool": "search_vault", "query": "deposit"}]}
    model = reasoner(plan=plan)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What is pending in my inbox about the deposit?")
    assert len(model.calls) == 2
    assert result.stages == ["plan", "retrieve", "synthesize", "ground_check"]
    plan_prompt = " ".join(m.content for m in model.calls[0].messages)
    assert "£800" not in plan_prompt and "Dana" not in plan_prompt
    assert json.loads(model.calls[0].options.json_schema)["required"] == ["steps"]


@pytest.mark.parametrize(("mode", "calls"), [("always", 2), ("never", 1), ("auto", 1)])
@pytest.mark.parametrize(
    "question",
    ["What did we agree about the deposit?", "How much is the deposit, and when is it returned?"],
)
async def test_the_plan_hop_setting(tmp_path: Path, mode: str, calls: int, question: str) -> None:
    """Two questions at once search themselves: no plan unless it is always on."""
    model = reasoner(plan={"steps": [{"tool": "search_vault", "query": "deposit"}]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop=mode)
    await o.asker.ask("me", question)
    assert len(model.calls) == calls


async def test_invalid_steps_are_dropped_and_an_unusable_plan_falls_back(tmp_path: Path) -> None:
    plan = {
        "steps": [
            {"tool": "query_records", "collection": "passwords"},
            {"tool": "rm_rf"},
            {"tool": "search_vault"},
        ]
    }
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, reasoner(plan=plan), memory, plan_hop="always")
    result = await o.asker.ask("me", "the deposit?")
    assert len(result.dropped_steps) == 3
    assert "not allowlisted" in result.dropped_steps[0]
    assert [s.query for s in memory.searches] == ["the deposit?"]
    [row] = o.store.query("SELECT dropped_steps FROM telemetry_turns WHERE id = ?", result.turn_id)
    assert json.loads(row["dropped_steps"]) == result.dropped_steps  # reported in telemetry

    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path / "b", reasoner(plan="not json"), memory, plan_hop="always")
    await o.asker.ask("me", "boiler?")
    assert [s.query for s in memory.searches] == ["boiler?"]


async def test_the_models_search_covers_the_record_collections_with_the_notes(
    tmp_path: Path,
) -> None:
    """An inbox item or an event is found by the question itself, without the plan hop."""
    memory = FakeMemory(NOTES)
    await make_orchestrator(tmp_path, reasoner(), memory).asker.ask("me", "Christmas plans?")
    assert [s.collections for s in memory.searches] == [("events", "inbox", "entities")]

    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path / "b", reasoner(), memory, search_record_collections=[])
    await o.asker.ask("me", "Christmas plans?")
    assert [s.collections for s in memory.searches] == [()]  # the notes only


async def test_a_plan_without_a_search_searches_the_question_too(tmp_path: Path) -> None:
    """A full memory never gets the empty-memory answer because a records step came back empty,
    and a plan of lookups alone never keeps the notes from the model."""
    plan = {"steps": [{"tool": "query_records", "collection": "events"}]}
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, reasoner(plan=plan), memory, plan_hop="always")
    result = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)
    assert [s.query for s in memory.searches] == ["What did we agree about the deposit?"]
    assert "fallback_search" not in result.stages  # the search was a step of the plan
    assert result.answer != EMPTY_MEMORY_ANSWER and not result.abstained


async def test_a_plan_that_searches_in_its_own_words_searches_the_question_too(
    tmp_path: Path,
) -> None:
    """The model's query is its words; the question's ("rexml/document") is searched as well."""
    question = "I keep hitting 'cannot load such file -- rexml/document'. Since when, and why?"
    plan = {"steps": [{"tool": "search_vault", "query": "ruby version"}]}
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, reasoner(plan=plan), memory, plan_hop="always")
    await o.asker.ask("me", question)
    assert [s.query for s in memory.searches] == [question, "ruby version"]


async def test_an_empty_memory_gets_the_canned_answer_without_a_model_call(
    tmp_path: Path,
) -> None:
    model = reasoner()
    result = await make_orchestrator(tmp_path, model, FakeMemory([])).asker.ask("me", "anything?")
    assert result.answer == EMPTY_MEMORY_ANSWER and result.abstained
    assert model.calls == []


async def test_the_top_n_cap_applies_per_call(tmp_path: Path) -> None:
    model = reasoner()
    await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask("me", "q?", limit=1)
    prompt = model.calls[0].messages[-1].content
    assert "[1] " in prompt and "[2] " not in prompt


async def test_the_skeptic_runs_its_extra_stages_each_audited(tmp_path: Path) -> None:
    model = ScriptedReasoner(
        {PLAN: [json.dumps({"steps": []})], "AGAINST": ["counter query"], ANSWER: GOOD}
    )
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, model, memory)
    result = await o.asker.ask("me", "the deposit?", persona_name="skeptic")
    assert result.stages == [
        "retrieve",
        "seek_counter_evidence",
        "synthesize",
        "ground_check",
        "revise",
    ]
    assert len(model.calls) == 3
    assert o.store.query("SELECT COUNT(*) FROM llm_log")[0][0] == 3
    assert [s.query for s in memory.searches] == ["the deposit?", "counter query"]
    assert memory.searches[0].include_contested and memory.searches[0].k == 20


async def test_a_persona_with_reframe_rewrites_the_question_before_planning(tmp_path: Path) -> None:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "editor.toml").write_text(
        'name = "editor"\ndescription = "Sharpens the question first."\nchunks = 5\n'
        'stages = ["reframe", "plan", "retrieve", "synthesize", "ground_check"]\n'
        'system_prompt = "You answer precisely."\n'
    )
    model = ScriptedReasoner(
        {
            "Rewrite the question": ["  What deposit did Dana\nagree to? "],
            PLAN: [json.dumps({"steps": []})],
            ANSWER: GOOD,
        }
    )
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, model, memory, plan_hop="always")
    result = await o.asker.ask("me", "deposit?", persona_name="editor")
    assert result.stages == ["reframe", "plan", "retrieve", "synthesize", "ground_check"]
    assert result.reframed_question == "What deposit did Dana agree to?"
    assert model.calls[1].messages[-1].content == "Question: What deposit did Dana agree to?"
    assert [s.query for s in memory.searches] == ["What deposit did Dana agree to?"]
    purposes = o.store.query("SELECT purpose FROM llm_log ORDER BY created_at")
    assert [r["purpose"] for r in purposes] == ["ask_reframe", "ask_plan", "ask_synthesize"]


async def test_a_question_naming_a_day_also_searches_the_notes_dated_then(tmp_path: Path) -> None:
    # Nothing in "What happened on 10 March 2026?" matches the boiler note's words; its date does.
    model = reasoner(["The boiler was fixed [1]."])
    memory = FakeMemory(NOTES)
    o = make_orchestrator(tmp_path, model, memory)
    result = await o.asker.ask("me", "What happened on 10 March 2026?", include_sensitive=True)

    assert [(s.since, s.until) for s in memory.searches] == [("", ""), ("2026-03-10", "2026-03-10")]
    assert result.stages == ["dated_search", "retrieve", "synthesize", "ground_check"]
    prompt = model.calls[0].messages[-1].content
    # In both lists, the dated note comes first; the plain search's first follows.
    assert prompt.startswith("Sources:\n\n[1] Boiler (10 March 2026)\n")
    assert "[2] Flat lease" in prompt
    # A question that names no period runs the one plain search.
    memory.searches.clear()
    await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)
    assert [(s.since, s.until) for s in memory.searches] == [("", "")]

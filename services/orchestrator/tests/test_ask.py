"""Ask (SPEC B1-B4, B8, B12) with scripted stages standing in for the model and memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.orchestrator.ask import Asker
from memex.orchestrator.briefing import EMPTY_MEMORY_ANSWER
from memex.orchestrator.chat import Chatter
from memex.orchestrator.service import Orchestrator
from memex.shared.errors import FailedPrecondition, InvalidArgument

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_context

PLAN = "You plan how to look up"
ANSWER = 'Return JSON with "answer"'


def answer(text: str, *citations: dict[str, str]) -> list[str]:
    payload = json.dumps({"answer": text, "citations": list(citations), "opinion": ""})
    return [payload[:10], payload[10:]]


GOOD = answer(
    "The deposit is £800.",
    {"episode": "ep-deposit", "quote": "the deposit is £800", "support": "verbatim"},
    {"episode": "ep-made-up", "quote": "x", "support": "verbatim"},
    {"episode": "entities:dana", "quote": "landlord", "support": "paraphrase"},
)


def reasoner(plan: Any, reply: list[str] = GOOD, local: bool = True) -> ScriptedReasoner:
    text = plan if isinstance(plan, str) else json.dumps(plan)
    return ScriptedReasoner({PLAN: [text], ANSWER: reply}, local=local)


async def test_a_default_ask_is_exactly_two_audited_model_calls(tmp_path: Path) -> None:
    model = reasoner(
        {
            "steps": [
                {"tool": "search_vault", "query": "deposit"},
                {"tool": "query_records", "collection": "entities"},
            ]
        }
    )
    context = make_context(tmp_path, model, FakeMemory(NOTES))
    result = await Asker(context).ask("me", "What did we agree about the deposit?")

    assert len(model.calls) == 2
    assert [
        r["purpose"] for r in context.store.query("SELECT purpose FROM llm_log ORDER BY created_at")
    ] == ["ask_plan", "ask_synthesize"]
    assert result.stages == ["plan", "retrieve", "synthesize", "ground_check"]
    plan_prompt = " ".join(m.content for m in model.calls[0].messages)
    assert "£800" not in plan_prompt and "Dana" not in plan_prompt  # the plan hop never sees data
    assert json.loads(model.calls[0].options.json_schema)["required"] == ["steps"]
    answer_schema = json.loads(model.calls[1].options.json_schema)
    cite_ids = answer_schema["properties"]["citations"]["items"]["properties"]["episode"]["enum"]
    assert sorted(cite_ids) == [
        "entities:dana",
        "ep-boiler",
        "ep-deposit",
        "ep-therapy",
    ]  # only what is shown
    assert [c.ref for c in result.citations] == ["[[Flat lease]]", "entities:dana"]
    assert [c.support for c in result.citations] == ["verbatim", "verbatim"]
    assert result.grounding.dropped == ("ep-made-up",)
    assert not result.abstained
    assert result.answer == "The deposit is £800."


async def test_invalid_steps_are_dropped_and_an_unusable_plan_falls_back(tmp_path: Path) -> None:
    plan = {
        "steps": [
            {"tool": "query_records", "collection": "passwords"},
            {"tool": "rm_rf"},
            {"tool": "search_vault"},
        ]
    }
    memory = FakeMemory(NOTES)
    context = make_context(tmp_path, reasoner(plan), memory)
    result = await Asker(context).ask("me", "the deposit?")
    assert len(result.dropped_steps) == 3
    assert "not allowlisted" in result.dropped_steps[0]
    assert [s.query for s in memory.searches] == ["the deposit?"]
    [row] = context.store.query(
        "SELECT dropped_steps FROM telemetry_turns WHERE id = ?", result.turn_id
    )
    assert json.loads(row["dropped_steps"]) == result.dropped_steps  # reported in telemetry

    memory = FakeMemory(NOTES)
    await Asker(make_context(tmp_path / "b", reasoner("not json at all"), memory)).ask(
        "me", "boiler?"
    )
    assert [s.query for s in memory.searches] == ["boiler?"]


async def test_sensitive_items_are_withheld_from_a_remote_reasoner(tmp_path: Path) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]}, local=False)
    result = await Asker(make_context(tmp_path, model, FakeMemory(NOTES))).ask("me", "how am I?")
    synthesize_prompt = model.calls[1].messages[-1].content
    assert "panic" not in synthesize_prompt
    assert "£800" in synthesize_prompt
    assert result.withheld == 1
    assert result.answer.endswith("\n\n_(1 sensitive source withheld from the cloud answer.)_")


async def test_a_local_reasoner_sees_sensitive_items_unless_the_setting_says_no(
    tmp_path: Path,
) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]})
    result = await Asker(make_context(tmp_path, model, FakeMemory(NOTES))).ask("me", "how am I?")
    assert "panic" in model.calls[1].messages[-1].content and result.withheld == 0

    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]})
    context = make_context(tmp_path / "b", model, FakeMemory(NOTES), local_sees_sensitive=False)
    result = await Asker(context).ask("me", "how am I?")
    assert "panic" not in model.calls[1].messages[-1].content and result.withheld == 1


async def test_the_top_n_cap_applies_per_call(tmp_path: Path) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]})
    await Asker(make_context(tmp_path, model, FakeMemory(NOTES))).ask("me", "q?", limit=1)
    assert model.calls[1].messages[-1].content.count("episode ") == 1


async def test_ungrounded_answers_abstain_and_say_so(tmp_path: Path) -> None:
    made_up = answer(
        "It was £5000.", {"episode": "ep-nope", "quote": "£5000", "support": "verbatim"}
    )
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]}, made_up)
    context = make_context(tmp_path, model, FakeMemory(NOTES))
    result = await Asker(context).ask("me", "the deposit?")
    assert result.abstained and result.citations == []
    assert "could not ground an answer" in result.answer and "£5000" not in result.answer
    [row] = context.store.query("SELECT abstained, grounding_score FROM telemetry_turns")
    assert (row["abstained"], row["grounding_score"]) == (1, 0.0)


async def test_an_empty_memory_gets_the_canned_answer(tmp_path: Path) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]})
    result = await Asker(make_context(tmp_path, model, FakeMemory([]))).ask("me", "anything?")
    assert result.answer == EMPTY_MEMORY_ANSWER and result.abstained
    assert len(model.calls) == 1  # the plan; nothing to synthesize from


async def test_telemetry_has_a_turn_and_a_row_per_retrieved_item(tmp_path: Path) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]})
    context = make_context(tmp_path, model, FakeMemory(NOTES))
    result = await Asker(context).ask("me", "the deposit?")
    rows = context.store.query(
        "SELECT item_id, final_rank, cited FROM telemetry_retrievals WHERE turn_id = ? ORDER BY final_rank",
        result.turn_id,
    )
    assert [(r["item_id"], r["cited"]) for r in rows] == [
        ("c1", 1),
        ("c2", 0),
        ("c3", 0),
        ("entities:dana", 1),
    ]
    assert (
        context.store.query("SELECT COUNT(*) FROM conversations")[0][0] == 0
    )  # ask writes no conversation


async def test_the_skeptic_runs_its_extra_stages_each_audited(tmp_path: Path) -> None:
    model = ScriptedReasoner(
        {
            PLAN: [json.dumps({"steps": [{"tool": "search_vault", "query": "q"}]})],
            "AGAINST": ["counter query"],
            ANSWER: GOOD,
        }
    )
    memory = FakeMemory(NOTES)
    context = make_context(tmp_path, model, memory)
    result = await Asker(context).ask("me", "the deposit?", persona_name="skeptic")
    assert result.stages == [
        "plan",
        "retrieve",
        "seek_counter_evidence",
        "synthesize",
        "ground_check",
        "revise",
    ]
    assert len(model.calls) == 4
    assert context.store.query("SELECT COUNT(*) FROM llm_log")[0][0] == 4
    assert [s.query for s in memory.searches] == ["q", "counter query"]
    assert memory.searches[0].include_contested and memory.searches[0].k == 20


async def test_an_unwritable_audit_log_means_no_model_call(tmp_path: Path) -> None:
    model = reasoner({"steps": []})
    context = make_context(tmp_path, model, FakeMemory(NOTES))
    context.store.query("PRAGMA query_only = 1")  # the database refuses every write
    with pytest.raises(FailedPrecondition, match="audit log cannot be written"):
        await Asker(context).ask("me", "the deposit?")
    assert model.calls == []


async def test_audit_rows_are_redacted(tmp_path: Path) -> None:
    model = reasoner({"steps": [{"tool": "search_vault", "query": "q"}]}, local=False)
    context = make_context(tmp_path, model, FakeMemory(NOTES))
    await Asker(context).ask("me", "email dana@example.com about the deposit")
    logged = " ".join(
        r["prompt"] + r["response"]
        for r in context.store.query("SELECT prompt, response FROM llm_log")
    )
    assert "dana@example.com" not in logged and "[EMAIL]" in logged
    assert all(r["outcome"] == "ok" for r in context.store.query("SELECT outcome FROM llm_log"))


@pytest.mark.parametrize(("question", "limit"), [("", 0), ("   ", 0), ("x" * 4001, 0), ("ok?", 51)])
async def test_bad_questions_are_refused_before_any_model_call(
    tmp_path: Path, question: str, limit: int
) -> None:
    model = reasoner({"steps": []})
    with pytest.raises(InvalidArgument):
        await Asker(make_context(tmp_path, model, FakeMemory(NOTES))).ask(
            "me", question, limit=limit
        )
    assert model.calls == []


async def test_search_writes_a_telemetry_turn_and_a_row_per_item(tmp_path: Path) -> None:
    context = make_context(tmp_path, reasoner({"steps": []}), FakeMemory(NOTES))
    o = Orchestrator(context, Asker(context), Chatter(context))
    items, turn_id = await o.search("me", "the deposit", "", 3)
    assert len(items) == 3
    [turn] = context.store.query(
        "SELECT kind, query, persona, model, abstained, latency_ms FROM telemetry_turns "
        "WHERE id = ?",
        turn_id,
    )
    assert (turn["kind"], turn["query"], turn["persona"], turn["model"]) == (
        "search",
        "the deposit",
        "analyst",
        "scripted",
    )
    assert turn["latency_ms"] > 0
    rows = context.store.query(
        "SELECT item_id, final_rank, cited, channel_scores FROM telemetry_retrievals "
        "WHERE turn_id = ? ORDER BY final_rank",
        turn_id,
    )
    assert [(r["item_id"], r["final_rank"], r["cited"]) for r in rows] == [
        ("c1", 1, 0),
        ("c2", 2, 0),
        ("c3", 3, 0),
    ]
    assert all(isinstance(json.loads(r["channel_scores"]), dict) for r in rows)


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
    context = make_context(tmp_path, model, memory)
    result = await Asker(context).ask("me", "deposit?", persona_name="editor")
    assert result.stages == ["reframe", "plan", "retrieve", "synthesize", "ground_check"]
    assert result.reframed_question == "What deposit did Dana agree to?"
    assert model.calls[1].messages[-1].content == "Question: What deposit did Dana agree to?"
    assert [s.query for s in memory.searches] == ["What deposit did Dana agree to?"]
    purposes = context.store.query("SELECT purpose FROM llm_log ORDER BY created_at")
    assert [r["purpose"] for r in purposes] == ["ask_reframe", "ask_plan", "ask_synthesize"]

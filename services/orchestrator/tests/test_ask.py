"""Ask (SPEC B1-B4, B8, B12; issue 10) with scripted stages standing in for model and memory."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from memex.orchestrator.ask import Asker
from memex.orchestrator.ask_events import Draft, Finished, Redraft, Started
from memex.orchestrator.briefing import CITE_REMINDER, EMPTY_MEMORY_ANSWER, today_line
from memex.orchestrator.items import ShownItem
from memex.orchestrator.policy import scope
from memex.orchestrator.ports import ChatMessage, GenerateOptions, Usage
from memex.shared.errors import FailedPrecondition, InvalidArgument

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

PLAN = "You plan how to look up"
ANSWER = "How to answer:"
GOOD = ["The deposit is £800 [", "1], returned in May [1]. Dana is the landlord [4][9]."]


def reasoner(reply: list[str] = GOOD, plan: Any = None, local: bool = True) -> ScriptedReasoner:
    replies = {ANSWER: reply}
    if plan is not None:
        replies[PLAN] = [plan if isinstance(plan, str) else json.dumps(plan)]
    return ScriptedReasoner(replies, local=local)


async def test_a_default_ask_is_one_audited_model_call_citing_sources_by_number(
    tmp_path: Path,
) -> None:
    model = reasoner()
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)

    assert len(model.calls) == 1
    [row] = o.store.query("SELECT purpose FROM llm_log")
    assert row["purpose"] == "ask_synthesize"
    assert result.stages == ["retrieve", "synthesize", "ground_check"]
    prompt = model.calls[0].messages[-1].content
    assert prompt.startswith("Sources:\n\n[1] Flat lease (1 February 2026)\nAgreed with Dana")
    assert "[4] Record: Dana Ruiz" in prompt and prompt.endswith(
        f"\n\n{today_line()}\nQuestion: What did we agree about the deposit?\n{CITE_REMINDER}"
    )
    assert model.calls[0].options.json_schema == ""  # prose, not JSON
    assert [c.ref for c in result.citations] == ["[[Flat lease]]", "entities:dana"]
    assert (
        result.citations[0].quote == "Agreed with Dana that the deposit is £800, returned in May."
    )
    assert result.citations[0].support == "verbatim"  # every word of the claim is there
    assert result.grounding.dropped == ("[9]",)
    assert not result.abstained
    assert result.answer == (
        "The deposit is £800 [[Flat lease]], returned in May [[Flat lease]]. "
        "Dana is the landlord entities:dana."
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
async def test_the_plan_hop_setting(tmp_path: Path, mode: str, calls: int) -> None:
    model = reasoner(plan={"steps": [{"tool": "search_vault", "query": "deposit"}]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop=mode)
    await o.asker.ask("me", "What did we agree about the deposit?")
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


async def test_an_empty_memory_gets_the_canned_answer_without_a_model_call(
    tmp_path: Path,
) -> None:
    model = reasoner()
    result = await make_orchestrator(tmp_path, model, FakeMemory([])).asker.ask("me", "anything?")
    assert result.answer == EMPTY_MEMORY_ANSWER and result.abstained
    assert model.calls == []


async def test_sensitive_items_are_withheld_from_a_remote_reasoner(tmp_path: Path) -> None:
    model = reasoner(local=False)
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "how am I?"
    )
    prompt = model.calls[0].messages[-1].content
    assert "panic" not in prompt
    assert "£800" in prompt
    assert result.withheld == 1
    assert result.answer.endswith("\n\n_(1 sensitive source withheld from the cloud answer.)_")


async def test_a_local_reasoner_sees_sensitive_items_unless_the_setting_says_no(
    tmp_path: Path,
) -> None:
    model = reasoner()
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "how am I?", include_sensitive=True
    )
    assert "panic" in model.calls[0].messages[-1].content and result.withheld == 0

    model = reasoner()
    o = make_orchestrator(tmp_path / "b", model, FakeMemory(NOTES), local_sees_sensitive=False)
    result = await o.asker.ask("me", "how am I?", include_sensitive=True)  # asked, yet the setting
    assert "panic" not in model.calls[0].messages[-1].content and result.withheld == 1


async def test_an_ask_that_did_not_ask_for_sensitive_notes_withholds_them_from_a_local_model(
    tmp_path: Path,
) -> None:
    """Issue 11: an answer is a read. Its text and quotes go to whoever called (perhaps a cloud
    model over MCP), so a sensitive note reaches even a local model only when asked for."""
    model = reasoner(["The deposit is £800 [1]. You talked through the panic attacks [3]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did I talk about, and what is the deposit?")
    prompt = " ".join(m.content for c in model.calls for m in c.messages)
    assert "panic" not in prompt and "Therapy" not in prompt  # the model never saw it
    assert "£800" in prompt
    assert result.withheld == 1
    assert result.answer.endswith("\n\n_(1 sensitive source withheld from this answer.)_")
    assert all(c.episode_id != "ep-therapy" for c in result.citations)
    assert "[[Therapy]]" not in result.answer

    model = reasoner(["You talked through the panic attacks [3]."])
    o = make_orchestrator(tmp_path / "b", model, FakeMemory(NOTES))
    asked = await o.asker.ask("me", "What did I talk about?", include_sensitive=True)
    assert "panic" in model.calls[0].messages[-1].content and asked.withheld == 0
    assert [c.episode_id for c in asked.citations] == ["ep-therapy"]


async def test_an_ask_finding_only_sensitive_notes_says_they_were_withheld(tmp_path: Path) -> None:
    model = reasoner()
    therapy = [n for n in NOTES if n.sensitive]
    result = await make_orchestrator(tmp_path, model, FakeMemory(therapy)).asker.ask(
        "me", "What did I talk about?"
    )
    assert model.calls == [] and result.abstained and result.abstain_reason == "withheld"
    assert result.answer == (
        "Only sensitive notes match this question, and they were withheld.\n\n"
        "_(1 sensitive source withheld from this answer.)_"
    )


async def test_the_top_n_cap_applies_per_call(tmp_path: Path) -> None:
    model = reasoner()
    await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask("me", "q?", limit=1)
    prompt = model.calls[0].messages[-1].content
    assert "[1] " in prompt and "[2] " not in prompt


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (["It was £5000 [7]."], "unsupported"),  # names no source shown; none has £5000
        (["It was sunny [7]."], "uncited"),  # names no source shown
        (["It was £800 [1] [7] [8]."], "ungrounded"),  # most numbers name nothing shown
        (["I don't know."], "declined"),
        (["The notes do not mention the deposit [1]."], "declined"),
        (["Your cat is called Pixel and likes tuna [2]."], "unsupported"),
        # Every word is in [1]; the amount is in no source (a model's mix of two notes).
        (["The deposit of £950 was returned in May [1]."], "unsupported"),
        # An amount no source holds, beside a sentence that one supports word for word.
        (["It cost £5 a visit. The boiler was fixed after three visits [2]."], "unsupported"),
        (["It was probably sunny."], "uncited"),
    ],
)
async def test_answers_that_do_not_rest_on_a_source_abstain_and_say_so(
    tmp_path: Path, reply: list[str], reason: str
) -> None:
    model = reasoner(reply)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "the deposit?", include_sensitive=True)
    assert result.abstained and result.citations == [] and result.abstain_reason == reason
    assert result.answer.startswith("I could not ground an answer to this in your notes")
    assert "The closest notes were [[Flat lease]], [[Boiler]], [[Therapy]]." in result.answer
    assert result.opinion == ""  # a right answer never hides in opinion
    [row] = o.store.query("SELECT abstained FROM telemetry_turns")
    assert row["abstained"] == 1


async def test_an_answer_resting_on_sources_about_something_else_abstains(tmp_path: Path) -> None:
    model = reasoner(["You drive a car that cost £800 [1]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What car do I drive?"
    )
    assert result.abstained and result.abstain_reason == "off_topic"


async def test_an_answer_that_borrows_a_figure_from_another_note_abstains(tmp_path: Path) -> None:
    # Told in the boiler note's words; the £800 is the deposit's, in another note.
    model = reasoner(["The boiler was fixed after the visits for £800 [2]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What did the boiler repair cost?"
    )
    assert result.abstained and result.abstain_reason == "unsupported"


async def test_an_answer_of_another_kind_than_the_one_asked_for_abstains(tmp_path: Path) -> None:
    # Asked for a plugin, it gives what the boiler note holds; every word of it is there.
    model = reasoner(["The boiler was fixed after three visits [2]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "Which plugin fixed the boiler?"
    )
    assert result.abstained and result.abstain_reason == "wrong_kind"


async def test_an_answer_that_restates_the_question_abstains(tmp_path: Path) -> None:
    model = reasoner(["The deposit was agreed [1]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What was agreed about the deposit?"
    )
    assert result.abstained and result.abstain_reason == "uninformative"


@pytest.mark.parametrize(
    ("reply", "stage"),
    [
        ("The boiler was fixed after three visits [1].", "reanchor"),  # the wrong number
        ("The boiler was fixed after three visits.", "attribute"),  # no number at all
    ],
)
async def test_a_fact_one_source_holds_is_cited_to_it_whatever_number_the_model_wrote(
    tmp_path: Path, reply: str, stage: str
) -> None:
    model = reasoner([reply])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask("me", "boiler?")
    assert not result.abstained and stage in result.stages
    [citation] = result.citations
    assert (citation.ref, citation.support) == ("[[Boiler]]", "verbatim")
    assert result.answer.startswith(reply.replace("[1]", "[[Boiler]]"))


async def test_telemetry_has_a_turn_and_a_row_per_retrieved_item(tmp_path: Path) -> None:
    o = make_orchestrator(tmp_path, reasoner(), FakeMemory(NOTES))
    result = await o.asker.ask("me", "the deposit?", include_sensitive=True)
    rows = o.store.query(
        "SELECT item_id, final_rank, cited FROM telemetry_retrievals WHERE turn_id = ? "
        "ORDER BY final_rank",
        result.turn_id,
    )
    assert [(r["item_id"], r["cited"]) for r in rows] == [
        ("c1", 1),
        ("c2", 0),
        ("c3", 0),
        ("entities:dana", 1),
    ]
    assert o.store.query("SELECT COUNT(*) FROM conversations")[0][0] == 0  # no conversation
    [logged] = o.store.list_logged_asks("me", 10)  # what eval --replay asks again
    assert (logged.answer, logged.cited_refs) == (
        result.answer,
        ["[[Flat lease]]", "entities:dana"],
    )


async def test_the_ask_streams_its_draft_then_the_checked_result(tmp_path: Path) -> None:
    model = reasoner(["The dep", "osit is £800 [", "1", "]. Dana", " is the landlord [4]."])
    events = [
        e
        async for e in make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert isinstance(events[0], Started)
    assert events[0].sources == ["[[Flat lease]]", "[[Boiler]]", "[[Therapy]]", "entities:dana"]
    drafts = [e.text for e in events if isinstance(e, Draft)]
    assert len(drafts) >= 3
    assert (
        "".join(drafts) == "The deposit is £800 [[Flat lease]]. Dana is the landlord entities:dana."
    )
    assert all("[1" not in d and "[4" not in d for d in drafts)  # no raw number ever shows
    assert isinstance(events[-1], Finished) and not events[-1].result.abstained


async def test_a_space_streamed_alone_reaches_the_reader(tmp_path: Path) -> None:
    # Qwen's tokenizer writes the space before a digit as a token of its own.
    model = reasoner(["The deposit is", " ", "8", "0", "0", " pounds [1]."])
    events = [
        e
        async for e in make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    drafts = [e.text for e in events if isinstance(e, Draft)]
    assert "".join(drafts) == "The deposit is 800 pounds [[Flat lease]]."
    assert all(d.strip() for d in drafts)  # no event carries whitespace alone


async def test_a_model_that_loops_is_stopped_at_the_first_repeat(tmp_path: Path) -> None:
    loop = ["The deposit is £800 [1]. ", "Dana is the landlord [4]. "] * 20
    model = reasoner(loop)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "deposit?", include_sensitive=True)
    assert (
        result.answer == "The deposit is £800 [[Flat lease]]. Dana is the landlord entities:dana."
    )
    # Stopped on purpose, and audited so: not "cancelled", which says the reader went away.
    rows = o.store.query("SELECT outcome, response FROM llm_log WHERE purpose = 'ask_synthesize'")
    assert [r["outcome"] for r in rows] == ["stopped"]
    assert rows[0]["response"].count("The deposit is £800") == 2  # what the model wrote, kept


async def test_a_quote_is_graded_against_the_chunk_that_holds_it(tmp_path: Path) -> None:
    """Every chunk of a note shares its episode id; each number names one chunk."""
    chunks = [
        ShownItem(
            item_id=f"c{n}",
            episode_id="ep-garden",
            ref="[[Garden]]",
            title="Garden",
            text=text,
        )
        for n, text in enumerate(
            [
                "# Plot\nThe plot is 23B, near the gate.",
                "# Costs\nThe rent is £48 a year, paid in March.",
                "# People\nRon is the secretary.",
            ]
        )
    ]
    model = reasoner(["The rent is £48 a year [2]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(chunks))
    result = await o.asker.ask("me", "What is the rent?")
    [citation] = result.citations
    assert (citation.item_id, citation.support) == ("c1", "verbatim")
    assert citation.quote == "The rent is £48 a year, paid in March."
    cited = o.store.query("SELECT item_id FROM telemetry_retrievals WHERE cited = 1")
    assert [r["item_id"] for r in cited] == ["c1"]


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


async def test_an_unwritable_audit_log_means_no_model_call(tmp_path: Path) -> None:
    model = reasoner()
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    o.store.query("PRAGMA query_only = 1")  # the database refuses every write
    with pytest.raises(FailedPrecondition, match="audit log cannot be written"):
        await o.asker.ask("me", "the deposit?")
    assert model.calls == []


async def test_audit_rows_are_redacted(tmp_path: Path) -> None:
    model = reasoner(local=False)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    await o.asker.ask("me", "email dana@example.com about the deposit")
    logged = " ".join(
        r["prompt"] + r["response"] for r in o.store.query("SELECT prompt, response FROM llm_log")
    )
    assert "dana@example.com" not in logged and "[EMAIL]" in logged
    assert all(r["outcome"] == "ok" for r in o.store.query("SELECT outcome FROM llm_log"))


@pytest.mark.parametrize(("question", "limit"), [("", 0), ("   ", 0), ("x" * 4001, 0), ("ok?", 51)])
async def test_bad_questions_are_refused_before_any_model_call(
    tmp_path: Path, question: str, limit: int
) -> None:
    model = reasoner()
    with pytest.raises(InvalidArgument):
        await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
            "me", question, limit=limit
        )
    assert model.calls == []


async def test_search_writes_a_telemetry_turn_and_a_row_per_item(tmp_path: Path) -> None:
    o = make_orchestrator(tmp_path, reasoner(), FakeMemory(NOTES))
    items, turn_id = await o.reads.search(scope("me", include_sensitive=True), "the deposit", k=3)
    assert len(items) == 3
    [turn] = o.store.query(
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
    rows = o.store.query(
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


# A model this slow gets the first pass's floor (MIN_SOURCES_TOKENS, 300): two of these notes.
SLOW = 0.5
_WEATHER = " ".join(f"Line {n} is about the weather that week." for n in range(12))
LONG_NOTES = [replace(item, text=f"{item.text}\n\n{_WEATHER}") for item in NOTES]


def slow_asker(tmp_path: Path, model: ScriptedReasoner, **settings: object) -> Asker:
    """An asker whose model is so slow that its first pass reads two of the long notes."""
    return make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
        **settings,
    ).asker


async def test_a_slow_model_answers_from_its_best_sources_when_they_hold_the_answer(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    asker = slow_asker(tmp_path, model, ask_confirm_first_pass=False)
    events = [e async for e in asker.stream("me", "the deposit?", include_sensitive=True)]

    [call] = model.calls
    prompt = call.messages[-1].content
    assert "[1] Flat lease" in prompt and "[2] Boiler" in prompt and "[3]" not in prompt
    started, *drafts, finished = events
    assert isinstance(started, Started) and len(started.sources) == 4  # the whole briefing
    assert started.source_paths[0] == "home/Flat lease.md"  # a title need not be its file's
    # The first pass streams: its draft is the answer when it stands.
    texts = [d.text for d in drafts if isinstance(d, Draft)]
    assert len(texts) == len(drafts)
    assert "".join(texts) == "The deposit is £800 [[Flat lease]]."
    assert isinstance(finished, Finished)
    result = finished.result
    assert not result.abstained and result.stages == ["retrieve", "synthesize", "ground_check"]
    assert [(c.ref, c.path) for c in result.citations] == [("[[Flat lease]]", "home/Flat lease.md")]


async def test_a_first_pass_that_stands_is_kept_when_the_whole_briefing_confirms_it(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    first, whole = (c.messages[-1].content for c in model.calls)
    assert "[3]" not in first
    # The whole briefing starts as the first prompt did, so the model reads only what was added.
    assert whole.startswith(first.split(f"\n\n{today_line()}")[0] + "\n\n[3] Therapy")
    assert not [e for e in events if isinstance(e, Redraft)]  # the reader keeps the draft
    drafts = "".join(e.text for e in events if isinstance(e, Draft))
    assert drafts == "The deposit is £800 [[Flat lease]]."
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.result.answer == drafts and not finished.result.abstained
    assert finished.result.stages == ["retrieve", "synthesize", "ground_check", "confirm"]


async def test_a_first_pass_is_kept_over_an_answer_that_rests_on_its_sources_less_well(
    tmp_path: Path,
) -> None:
    # "1 May": the 1 is only the note's date, so the whole briefing's answer is a paraphrase
    # where the draft was the note's words.
    later = ["The deposit is £800, returned on 1 May [1]."]
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=later)
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2 and not [e for e in events if isinstance(e, Redraft)]
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.result.answer == "The deposit is £800 [[Flat lease]]."
    assert finished.result.stages[-1] == "confirm"


@pytest.mark.parametrize(
    ("whole", "answer", "abstained"),
    [
        # Another note, as well supported ("returned in May" alone would be the same answer).
        ("The deposit is £800 [1]. Dana Ruiz is the landlord [4].", "The deposit is £800", False),
        ("I don't know.", "I could not ground an answer", True),
    ],
)
async def test_a_first_pass_that_the_whole_briefing_answers_otherwise_is_replaced(
    tmp_path: Path, whole: str, answer: str, abstained: bool
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=[whole])
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2
    redraft = next(i for i, e in enumerate(events) if isinstance(e, Redraft))
    assert events[redraft] == Redraft("all 4 sources answered otherwise")
    before = "".join(e.text for e in events[:redraft] if isinstance(e, Draft))
    assert before == "The deposit is £800 [[Flat lease]]."
    finished = events[-1]
    assert isinstance(finished, Finished)
    result = finished.result
    assert result.answer.startswith(answer) and result.abstained is abstained
    assert result.stages[-2:] == ["confirm", "replace"]
    # An answer that abstains is not shown as a draft; the result says it.
    after = "".join(e.text for e in events[redraft:] if isinstance(e, Draft))
    assert after == ("" if abstained else result.answer)


async def test_a_whole_briefing_answer_broken_without_declining_leaves_the_draft(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["The landlord may keep it."])
    events = [
        e
        async for e in slow_asker(tmp_path, model).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2 and not [e for e in events if isinstance(e, Redraft)]
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.result.answer == "The deposit is £800 [[Flat lease]]."
    assert not finished.result.abstained and finished.result.stages[-1] == "confirm"


@dataclass
class TwoAnswers(ScriptedReasoner):
    """Answers the first answer call with one reply and every later one with another."""

    later: list[str] = field(default_factory=list)

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        if self.calls:
            self.replies = {ANSWER: self.later}
        async for piece in super().generate(messages, options, usage):
            yield piece


async def test_a_first_pass_that_showed_nothing_widens_without_a_redraft(tmp_path: Path) -> None:
    model = TwoAnswers({ANSWER: [""]}, later=["Fixed after three visits [2]."])
    asker = make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
    ).asker
    events = [e async for e in asker.stream("me", "the boiler?", include_sensitive=True)]
    assert len(model.calls) == 2  # it widened
    assert not [e for e in events if isinstance(e, Redraft)]  # no draft to set aside
    assert "".join(e.text for e in events if isinstance(e, Draft)) == (
        "Fixed after three visits [[Boiler]]."
    )


async def test_a_first_answer_that_does_not_rest_on_its_sources_widens_to_the_whole_briefing(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["I don't know."]}, later=["Fixed after three visits [2]."])
    asker = make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
    ).asker
    events = [e async for e in asker.stream("me", "the boiler?", include_sensitive=True)]

    first, widened = (c.messages[-1].content for c in model.calls)
    # The widened prompt starts as the first did, so the model reads only what was added.
    assert widened.startswith(first.split(f"\n\n{today_line()}")[0] + "\n\n[3] Therapy")
    # The first draft streams, is set aside (Redraft), and the widened answer follows it.
    redraft = next(i for i, e in enumerate(events) if isinstance(e, Redraft))
    assert events[redraft] == Redraft("reading all 4 sources")
    before = [e.text for e in events[:redraft] if isinstance(e, Draft)]
    after = [e.text for e in events[redraft:] if isinstance(e, Draft)]
    assert "".join(before) == "I don't know."
    assert "".join(after) == "Fixed after three visits [[Boiler]]."
    assert sum(isinstance(e, Redraft) for e in events) == 1
    finished = events[-1]
    assert isinstance(finished, Finished)
    result = finished.result
    assert not result.abstained
    assert result.stages == [
        "retrieve",
        "synthesize",
        "ground_check",
        "widen",
        "synthesize",
        "ground_check",
    ]
    assert [c.ref for c in result.citations] == ["[[Boiler]]"]


async def test_a_model_fast_enough_for_the_whole_briefing_answers_in_one_call(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    asker = make_orchestrator(
        tmp_path, model, FakeMemory(LONG_NOTES), prefill_tokens_per_second=1000.0
    ).asker
    result = await asker.ask("me", "the deposit?", include_sensitive=True)
    [call] = model.calls
    assert "[4] Record: Dana Ruiz" in call.messages[-1].content
    assert result.stages == ["retrieve", "synthesize", "ground_check"]


async def test_an_ask_reports_and_keeps_its_claim_check(tmp_path: Path) -> None:
    """Issue 35: a sentence whose figure no cited source holds is cut from the answer; the
    grounding report and the telemetry turn list every specific with its verdict."""
    model = reasoner(["The deposit is £800 [1]. It was paid on 29 February [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)
    assert not result.abstained
    assert result.answer == "The deposit is £800 [[Flat lease]]."
    assert result.grounding.dropped_claims == ("It was paid on 29 February  .",)
    checked = {(s.text, s.verdict) for s in result.grounding.specifics}
    assert {("£800", "supported"), ("29", "unsupported")} <= checked
    [row] = o.store.query(
        "SELECT claim_check, dropped_claims FROM telemetry_turns WHERE id = ?", result.turn_id
    )
    kept = json.loads(row["claim_check"])
    assert {
        "text": "£800",
        "kind": "figure",
        "verdict": "supported",
        "ref": "[[Flat lease]]",
    } in kept
    assert json.loads(row["dropped_claims"]) == ["It was paid on 29 February  ."]


async def test_an_ask_whose_main_claim_is_unsupported_abstains_naming_the_closest_notes(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £950 [1]. It is returned in May [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "How big is the deposit?", include_sensitive=True)
    assert result.abstained and result.abstain_reason == "unsupported"
    assert "[[Flat lease]]" in result.answer and "£950" not in result.answer


COMPOUND = "How much is the deposit, and when is it returned?"


async def test_a_part_of_a_compound_question_the_answer_left_out_is_asked_for_again(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["It is returned in May [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    events = [e async for e in o.asker.stream("me", COMPOUND, include_sensitive=True)]
    first, part = ("\n".join(m.content for m in c.messages) for c in model.calls)
    # The part's prompt starts as the answer's did, question and all: the model reads the rest.
    assert part.startswith(first.removesuffix(CITE_REMINDER))
    assert "Still to answer: When is it returned?" in part
    finished = events[-1]
    assert isinstance(finished, Finished)
    result = finished.result
    expected = "The deposit is £800 [[Flat lease]]. It is returned in May [[Flat lease]]."
    assert result.answer == expected and not result.abstained
    assert "".join(e.text for e in events if isinstance(e, Draft)) == expected
    assert result.stages[-1] == "answer_parts"


@pytest.mark.parametrize(
    "later",
    [
        "The notes do not say when it is returned.",  # declined
        "It comes back on 3 June [1].",  # a date no source holds: the claim check cuts it
    ],
)
async def test_a_part_the_notes_do_not_answer_is_named_never_filled_in(
    tmp_path: Path, later: str
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=[later])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 2 and not result.abstained
    assert result.answer == (
        "The deposit is £800 [[Flat lease]].\n\n"
        "Your notes don't answer this part: When is it returned?"
    )


async def test_an_answer_to_every_part_needs_no_further_call(tmp_path: Path) -> None:
    reply = ["The deposit is £800 [1], and it is returned in May [1]."]
    model = TwoAnswers({ANSWER: reply}, later=["Never asked."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 1 and "answer_parts" not in result.stages


async def test_an_answer_that_names_a_command_in_part_shows_the_notes_whole_line(
    tmp_path: Path,
) -> None:
    note = ShownItem(
        item_id="c9",
        episode_id="ep-dash",
        ref="[[Remove a directory called -p]]",
        title="Remove a directory called -p",
        text="A folder named `-p` is removed with the rmdir command:\n\n```\n$ rmdir -- -p\n```",
    )
    model = reasoner(["It is removed with the `rmdir` command [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory([note]))
    result = await o.asker.ask("me", "How do I remove a folder named -p?")
    assert result.answer.endswith(
        "\n\nAs your note writes it: `rmdir -- -p` [[Remove a directory called -p]]"
    )


async def test_a_part_call_that_only_repeats_the_answer_names_nothing(tmp_path: Path) -> None:
    """The first sentence may have answered the part in words the part does not share; a model
    that says it again has not said the notes lack it."""
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["The deposit is £800 [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 2 and result.answer == "The deposit is £800 [[Flat lease]]."


async def test_a_declined_part_that_the_answer_shares_words_with_is_not_named(
    tmp_path: Path,
) -> None:
    """A small model declines a part it has just answered in other words: the part that a
    sentence of the answer touches is not said to be missing from the notes."""
    question = "How much is the flat deposit, and when does Dana return it?"
    reply = ["The flat deposit Dana holds is £800 [1]."]  # the first part's, by more words
    model = TwoAnswers({ANSWER: reply}, later=["The notes do not say."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", question, include_sensitive=True)
    assert len(model.calls) == 2
    assert result.answer == "The flat deposit Dana holds is £800 [[Flat lease]]."

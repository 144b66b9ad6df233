"""Ask's audit and telemetry (SPEC B4, B12): one audited, redacted, fail-closed path for every
model call; a telemetry turn with a row per retrieved item (for searches too) and a logged ask;
bad questions refused before any model call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memex.orchestrator.memory.policy import scope
from memex.shared.errors import FailedPrecondition, InvalidArgument

from .fakes import NOTES, FakeMemory, make_orchestrator, reasoner


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

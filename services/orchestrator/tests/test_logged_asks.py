"""Asks kept with their answers (migration 3) and listed over ListLoggedAsks, for eval --replay."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.memory.items import Citation
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.state import migrations
from memex.orchestrator.state.store import OrchestratorStore
from memex.orchestrator.v1 import orchestrator_pb2 as pb

from .conftest import older_database
from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator, serving


def cite(ref: str, item_id: str) -> Citation:
    return Citation(ref=ref, item_id=item_id, episode_id="e", quote="", support="verbatim")


def test_an_ask_keeps_its_answer_and_cited_refs_newest_first(state: Path | str) -> None:
    store = OrchestratorStore(state)
    store.record_telemetry(tenant="me", kind="ask", query="first?", latency_ms=5, persona="coach")
    store.record_telemetry(tenant="me", kind="search", query="a search", latency_ms=1)
    store.record_telemetry(tenant="me", kind="chat", query="a chat", latency_ms=1, answer="hi")
    store.record_telemetry(tenant="other", kind="ask", query="not mine", latency_ms=1)
    store.record_telemetry(
        tenant="me",
        kind="ask",
        query="second?",
        latency_ms=12.5,
        model="smollm2",
        persona="analyst",
        prompt_version="v9",
        abstained=True,
        answer="I don't know.",
        cited_refs=["[[Flat Deposit Agreement]]", "inbox:x"],
    )
    second, first = store.list_logged_asks("me")
    assert (second.question, second.answer, second.cited_refs) == (
        "second?",
        "I don't know.",
        ["[[Flat Deposit Agreement]]", "inbox:x"],
    )
    assert (second.abstained, second.model, second.prompt_version, second.latency_ms) == (
        True,
        "smollm2",
        "v9",
        12.5,
    )
    assert (first.question, first.persona, first.answer, first.cited_refs) == (
        "first?",
        "coach",
        "",
        [],
    )
    assert [a.question for a in store.list_logged_asks("me", limit=1)] == ["second?"]
    store.close()


async def test_the_recorder_derives_the_refs_from_the_citations(tmp_path: Path) -> None:
    o = make_orchestrator(tmp_path, ScriptedReasoner({}), FakeMemory(NOTES))
    await o.pipeline.recorder.record(
        tenant="me",
        kind="ask",
        query="deposit?",
        latency_ms=3,
        persona="analyst",
        items=NOTES[:2],
        citations=[
            cite("[[Flat lease]]", "c1"),
            cite("[[Flat lease]]", "c9"),
            cite("[[Boiler]]", "c2"),
        ],
        answer="£800.",
    )
    [logged] = o.store.list_logged_asks("me")
    assert (logged.answer, logged.cited_refs) == ("£800.", ["[[Flat lease]]", "[[Boiler]]"])
    o.store.close()


def test_a_database_from_before_migration_3_is_migrated_and_lists_old_asks(
    state: Path | str,
) -> None:
    before = older_database(state, below=3)
    with before.transaction() as db:
        db.execute(
            "INSERT INTO telemetry_turns (id, tenant, kind, query, persona, abstained, latency_ms, "
            "created_at) VALUES ('t1', 'me', 'ask', ?, 'friend', 1, 9.0, '2026-01-01')",
            ("old?",),
        )
    before.close()
    store = OrchestratorStore(state)
    [old] = store.list_logged_asks("me")
    assert (old.turn_id, old.question, old.persona, old.abstained) == ("t1", "old?", "friend", True)
    assert (old.answer, old.cited_refs) == ("", [])
    assert store.schema_version() == migrations()[-1][0] >= 3
    store.close()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Orchestrator]]:
    o = make_orchestrator(tmp_path, ScriptedReasoner({}), FakeMemory(NOTES))
    async with serving(o) as stub:
        yield stub, o


async def test_list_logged_asks_over_grpc(served: tuple[Any, Orchestrator]) -> None:
    stub, o = served
    for i in range(3):
        o.store.record_telemetry(
            tenant=o.settings.default_tenant,
            kind="ask",
            query=f"q{i}?",
            latency_ms=i,
            persona="analyst",
            answer=f"a{i}",
            cited_refs=[f"[[Note {i}]]"],
        )
    reply = await stub.ListLoggedAsks(pb.ListLoggedAsksRequest(limit=2))
    assert [(a.question, a.answer, list(a.cited_refs)) for a in reply.asks] == [
        ("q2?", "a2", ["[[Note 2]]"]),
        ("q1?", "a1", ["[[Note 1]]"]),
    ]
    assert reply.asks[0].persona == "analyst" and reply.asks[0].turn_id
    other = await stub.ListLoggedAsks(pb.ListLoggedAsksRequest(tenant="someone-else"))
    assert list(other.asks) == []
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await stub.ListLoggedAsks(pb.ListLoggedAsksRequest(limit=-1))
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT

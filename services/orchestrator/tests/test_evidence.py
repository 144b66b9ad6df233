"""Evidence bundles (issue 37): written once per ask, chat reply and queued answer, on SQLite and
PostgreSQL alike, read over the real servicer (GetEvidence) by any id the answer has, with
sensitive excerpts left out unless asked for, and gone with what they belong to."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.conversation.chat import Done
from memex.orchestrator.memory.forget import NoteQuotes
from memex.orchestrator.memory.policy import WITHHELD_HISTORY, WITHHELD_READ
from memex.orchestrator.queue.worker import ChatWorker
from memex.orchestrator.record.evidence import FORMAT, readable
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.state.store import OrchestratorStore
from memex.orchestrator.turn.pipeline import PROMPT_VERSION
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import NotFound

from .conftest import older_database
from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator, serving
from .test_worker import run_until

ANSWER = "How to answer:"
CHAT = "How to reply:"
# Cites the lease note (verbatim) and the sensitive therapy note.
REPLY = "The deposit is £800 [1]. You talked through the panic attacks [3]."
CHAT_REPLY = (
    'Dana keeps £800.\n@@CITATIONS@@\n[{"episode": "ep-deposit", "quote": "the deposit is £800"}]'
)
VERSIONED = [  # the lease chunk as retrieval sends it: its offsets and its note's version
    NOTES[0].__class__(
        **{
            **NOTES[0].__dict__,
            "attributes": {"start": 12.0, "end": 71.0, "note_version": "9f" * 32},
        }
    ),
    *NOTES[1:],
]


def orchestrator(tmp_path: Path, state: Path | str, model: ScriptedReasoner) -> Orchestrator:
    url = state if isinstance(state, str) else None
    return make_orchestrator(
        tmp_path, model, FakeMemory(VERSIONED), worker_poll_seconds=0.05, state_url=url
    )


async def bundle_of(stub: Any, answer_id: str, **request: Any) -> tuple[dict[str, Any], int]:
    reply = await stub.GetEvidence(pb.GetEvidenceRequest(tenant="me", turn_id=answer_id, **request))
    return json.loads(reply.bundle_json), reply.left_out


async def not_found(stub: Any, answer_id: str, tenant: str = "me") -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetEvidence(pb.GetEvidenceRequest(tenant=tenant, turn_id=answer_id))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    return caught.value.details() or ""


async def test_an_asks_bundle_holds_what_it_rested_on_and_leaves_sensitive_excerpts_out(
    tmp_path: Path, state: Path | str
) -> None:
    o = orchestrator(tmp_path, state, ScriptedReasoner({ANSWER: [REPLY]}))
    result = await o.asker.ask("me", "What did we agree, and how am I?", include_sensitive=True)
    async with serving(o) as stub:
        whole, left = await bundle_of(stub, result.turn_id, include_sensitive=True)
        shared, left_out = await bundle_of(stub, result.turn_id)
        await not_found(stub, "no-such-answer")
        assert "answers given before memex kept bundles have none" in (
            await not_found(stub, result.turn_id, tenant="someone-else")
        )
        with pytest.raises(grpc.aio.AioRpcError) as empty:
            await stub.GetEvidence(pb.GetEvidenceRequest(tenant="me", turn_id=" "))
        assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    # The whole bundle: the answer exactly as given, and everything it rested on.
    assert left == 0
    assert (whole["format"], whole["kind"], whole["turn_id"]) == (FORMAT, "ask", result.turn_id)
    assert (whole["question"], whole["answer"]) == (
        "What did we agree, and how am I?",
        result.answer,
    )
    assert (whole["model"], whole["persona"]) == ("scripted", "analyst")
    assert whole["prompt_version"] == PROMPT_VERSION and whole["abstained"] is False
    excerpts = {e["ref"]: e for e in whole["excerpts"]}
    assert set(excerpts) == {"[[Flat lease]]", "[[Boiler]]", "[[Therapy]]", "entities:dana"}
    lease, therapy = excerpts["[[Flat lease]]"], excerpts["[[Therapy]]"]
    assert lease["text"] == NOTES[0].text and lease["path"] == "home/Flat lease.md"
    assert lease["excerpt_sha256"] == hashlib.sha256(NOTES[0].text.encode()).hexdigest()
    assert (lease["note_version"], lease["chunk_start"], lease["chunk_end"]) == ("9f" * 32, 12, 71)
    assert excerpts["entities:dana"]["note_version"] == ""  # a record has no note
    assert lease["cited"] and therapy["cited"] and not excerpts["[[Boiler]]"]["cited"]
    assert therapy["sensitive"] and therapy["text"] == "Talked through the panic attacks."
    cited = {c["ref"]: c for c in whole["citations"]}
    assert [(c.ref, c.support) for c in result.citations] == [
        (ref, cited[ref]["support"]) for ref in ("[[Flat lease]]", "[[Therapy]]")
    ]
    assert cited["[[Flat lease]]"]["quote"] == result.citations[0].quote
    assert cited["[[Flat lease]]"]["source"] == lease["number"]
    assert whole["grounding"] == {"cited": 2, "grounded": 2, "score": 1.0, "dropped": []}
    specifics = {s["text"]: s for s in whole["claim_check"]["specifics"]}
    assert specifics["£800"]["verdict"] == "supported"
    assert specifics["£800"]["ref"] == "[[Flat lease]]"

    # Shared without asking: only that a sensitive excerpt (and its citation) was left out; the
    # answer that drew on it is left out too, as a conversation's reply would be.
    assert left_out == 1
    assert shared["left_out"] == {"excerpts": 1, "citations": 1, "answer": True}
    assert {"number": therapy["number"], "left_out": "sensitive"} in shared["excerpts"]
    assert {"source": therapy["number"], "left_out": "sensitive"} in shared["citations"]
    assert shared["answer"] == WITHHELD_READ and shared["claim_check"]["specifics"] == []
    assert "panic" not in json.dumps(shared) and "Therapy" not in json.dumps(shared)
    assert lease in shared["excerpts"]  # what is not sensitive stays whole


async def test_an_ask_that_withheld_sensitive_notes_has_nothing_to_leave_out(
    tmp_path: Path, state: Path | str
) -> None:
    o = orchestrator(tmp_path, state, ScriptedReasoner({ANSWER: ["The deposit is £800 [1]."]}))
    result = await o.asker.ask("me", "What did we agree about the deposit?")
    async with serving(o) as stub:
        bundle, left_out = await bundle_of(stub, result.turn_id)
    assert left_out == 0 and bundle["answer"] == result.answer
    assert "[[Therapy]]" not in {e["ref"] for e in bundle["excerpts"]}  # never shown to the model


async def test_a_chat_replys_bundle_is_found_by_its_message_id_and_goes_with_the_conversation(
    tmp_path: Path, state: Path | str
) -> None:
    o = orchestrator(tmp_path, state, ScriptedReasoner({CHAT: [CHAT_REPLY]}))
    events = [e async for e in o.chatter.chat("me", "", "What about the deposit?")]
    done = events[-1]
    assert isinstance(done, Done)
    [reply] = o.store.query("SELECT text FROM messages WHERE id = ?", done.message_id)
    async with serving(o) as stub:
        bundle, _ = await bundle_of(stub, done.message_id)
        again, _ = await bundle_of(stub, bundle["turn_id"])  # the telemetry turn's id finds it too
        assert again == bundle
        o.store.delete_conversation("me", bundle["conversation_id"])
        await not_found(stub, done.message_id)
        assert not o.store.query("SELECT * FROM evidence")  # gone with its conversation
    assert bundle["kind"] == "chat" and bundle["message_id"] == done.message_id
    assert bundle["answer"] == reply["text"] and bundle["question"] == "What about the deposit?"
    assert bundle["persona"] == "friend"
    assert [(c["ref"], c["support"]) for c in bundle["citations"]] == [
        ("[[Flat lease]]", "verbatim")
    ]


async def test_a_queued_answers_bundle_is_found_by_its_turn_id_and_goes_with_the_thread(
    tmp_path: Path, state: Path | str
) -> None:
    o = orchestrator(tmp_path, state, ScriptedReasoner({ANSWER: ["The deposit is £800 [1]."]}))
    first = await o.create_turn("me", "", "How much was the deposit?")
    await o.create_turn("me", first.thread_id, "And when is it returned?")
    await run_until(ChatWorker(o, o.settings), 2)
    turns = o.store.list_turns("me", first.thread_id)
    reply = turns[-1]
    assert reply.role == "assistant"
    async with serving(o) as stub:
        bundle, _ = await bundle_of(stub, reply.id)
        await not_found(stub, turns[1].id)  # a question has no bundle: its answer does
        await stub.DeleteThread(pb.DeleteThreadRequest(tenant="me", thread_id=first.thread_id))
        await not_found(stub, reply.id)
    assert (bundle["kind"], bundle["thread_id"], bundle["reply_turn_id"]) == (
        "queued",
        first.thread_id,
        reply.id,
    )
    assert bundle["question"] == "And when is it returned?" and bundle["answer"] == reply.text
    assert bundle["asked_as"].startswith("Earlier in this conversation:")
    assert bundle["asked_as"].endswith("Now: And when is it returned?")


def test_a_forgotten_notes_bundles_are_found_and_purged(tmp_path: Path, state: Path | str) -> None:
    store = OrchestratorStore(state)
    try:
        bundle = {
            "question": "deposit?",
            "answer": "£800.",
            "excerpts": [{"text": "Agreed with Dana that the deposit is £800, returned in May."}],
            "citations": [],
        }
        kept = {
            **bundle,
            "question": "boiler?",
            "answer": "Three visits.",
            "excerpts": [{"text": "The boiler was fixed after three visits."}],
        }
        showing = store.record_telemetry(
            tenant="", kind="ask", query="deposit?", latency_ms=1, evidence=bundle
        )
        store.record_telemetry(tenant="", kind="ask", query="boiler?", latency_ms=1, evidence=kept)
        quotes = NoteQuotes("ep-deposit", "Flat lease", NOTES[0].text)
        traces = store.note_traces("", "ep-deposit", [], quotes)
        assert traces.evidence == [showing] and traces.turns == []  # the turn quotes nothing
        store.purge_note_traces(traces)
        assert [
            r["question"] for r in map(_bundle, store.query("SELECT bundle FROM evidence"))
        ] == ["boiler?"]
        assert store.query("SELECT id FROM telemetry_turns WHERE id = ?", showing)  # turn stays
    finally:
        store.close()


def _bundle(row: Any) -> dict[str, Any]:
    return dict(json.loads(row["bundle"]))


def test_a_database_from_before_evidence_is_migrated_and_keeps_its_turns(
    tmp_path: Path, state: Path | str
) -> None:
    engine = older_database(state, below=8)
    with engine.transaction() as db:
        db.execute(
            "INSERT INTO telemetry_turns (id, tenant, kind, query, latency_ms, created_at) "
            "VALUES ('old', '', 'ask', 'q', 1, 'now')"
        )
    engine.close()
    store = OrchestratorStore(state)
    try:
        assert store.schema_version() >= 8
        assert store.query("SELECT id FROM telemetry_turns")[0]["id"] == "old"
        with pytest.raises(NotFound, match="no evidence bundle for answer 'old'"):
            store.evidence("", "old")  # an ask from before bundles has none, and says so
    finally:
        store.close()


def test_readable_leaves_nothing_out_without_sensitive_excerpts() -> None:
    bundle = {
        "answer": "a",
        "excerpts": [{"number": 1, "item_id": "c1", "sensitive": False}],
        "citations": [{"item_id": "c1", "source": 1}],
    }
    assert readable(bundle, include_sensitive=False) == (bundle, 0)


def test_a_queued_answers_history_is_left_out_when_its_turn_saw_sensitive_notes() -> None:
    bundle = {
        "question": "and then?",
        "answer": "a",
        "asked_as": "Earlier: my diagnosis was X.\nNow: and then?",
        "excerpts": [{"number": 1, "item_id": "c1", "sensitive": False}],
        "citations": [],
    }
    saw = {**bundle, "asked_sensitive": True}
    read, _ = readable(saw, include_sensitive=False)
    assert read["asked_as"] == WITHHELD_HISTORY
    assert readable(saw, include_sensitive=True)[0]["asked_as"] == saw["asked_as"]
    # a turn that did not see them had placeholders in its history already
    assert readable({**bundle, "asked_sensitive": False}, include_sensitive=False)[0] == {
        **bundle,
        "asked_sensitive": False,
    }
    # a bundle from before this was recorded is read the safe way
    assert readable(bundle, include_sensitive=False)[0]["asked_as"] == WITHHELD_HISTORY

"""Forget on the orchestrator, over real in-process gRPC on port 0: DeleteThread, and ForgetNote's
purge of telemetry and the LLM log with its receipt (retrieval is a stand-in here; the real one
is in services/retrieval/tests/test_forget_note.py and tests/e2e/test_forget.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.orchestrator.memory.forget import NoteQuotes
from memex.orchestrator.memory.items import Citation
from memex.orchestrator.ports import ForgetCheck, ForgetCount, ForgottenNote
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.state.store import ERASED
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import NotFound

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator, serving

EPISODE = "ep0123456789abcdef012345"
TITLE = "Quince Marmalade"
TEXT = (
    "# Quince Marmalade\n"
    "Zanzibar marmalade recipe: quince, cardamom and smoked paprika, simmered overnight.\n"
    "Write to jam.maker@example.com for the jars.\n"
    "## Jars\nSeven jars went to the cellar shelf behind the bicycles.\n"
)


@dataclass
class ForgettingMemory(FakeMemory):
    """FakeMemory that also holds one note and forgets it as retrieval's ForgetNote would."""

    notes: dict[str, str] = field(default_factory=lambda: {EPISODE: TEXT})
    leave: int = 0  # chunks a broken store "forgets" to delete

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> ForgottenNote:
        if note not in (EPISODE, TITLE, "kitchen/Quince Marmalade.md") or EPISODE not in self.notes:
            raise NotFound(f"no note has the episode id, vault path or title {note!r}")
        chunks = (f"{EPISODE}-0", f"{EPISODE}-1")
        if dry_run:
            return ForgottenNote(
                EPISODE,
                TITLE,
                "kitchen/Quince Marmalade.md",
                chunks,
                self.notes[EPISODE],
                counts=(ForgetCount("retrieval (fake)", "chunks", 2, 2),),
                checks=(ForgetCheck("retrieval (fake)", "lookup by episode id", 1, 1),),
                file_present=True,
            )
        del self.notes[EPISODE]
        return ForgottenNote(
            EPISODE,
            TITLE,
            "kitchen/Quince Marmalade.md",
            chunks,
            "",
            counts=(ForgetCount("retrieval (fake)", "chunks", 2 - self.leave, self.leave),),
            checks=(ForgetCheck("retrieval (fake)", "lookup by episode id", 1, 0),),
            file_present=True,
            tombstoned=True,
            scrubbed=True,
        )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Orchestrator, ForgettingMemory]]:
    memory = ForgettingMemory(NOTES)
    orchestrator = make_orchestrator(tmp_path, ScriptedReasoner({}), memory)
    async with serving(orchestrator) as stub:
        yield stub, orchestrator, memory


# A prompt another tenant's model call logged, quoting the same passage of their own note.
THEIR_PROMPT = "Sources:\n\n[1] Seven jars went to the cellar shelf behind the bicycles."


# An evidence bundle whose model was shown a passage of the note (issue 37).
SHOWN = {
    "question": "boiler?",
    "answer": "Serviced in May.",
    "excerpts": [{"text": "Seven jars went to the cellar shelf behind the bicycles."}],
    "citations": [],
}


def seed(context: Orchestrator) -> dict[str, str]:
    """Telemetry and LLM log rows that reference or quote the note, and some that do not."""
    store, tenant = context.store, context.settings.default_tenant
    ids = {
        "quoting": store.record_telemetry(
            tenant=tenant,
            kind="ask",
            query="what spices go in the marmalade?",
            latency_ms=1,
            answer="Quince, cardamom and smoked paprika, simmered overnight [[Quince Marmalade]].",
            cited_refs=["[[Quince Marmalade]]"],
            retrievals=[(f"{EPISODE}-0", 0.9, {"vector": 0.9}, True), ("other-0", 0.5, {}, False)],
        ),
        "searched": store.record_telemetry(
            tenant=tenant,
            kind="search",
            query="cellar",
            latency_ms=1,
            # an older version of the note had more chunks: -7 is no longer a chunk id
            retrievals=[(f"{EPISODE}-7", 0.4, {}, False), ("other-1", 0.3, {}, False)],
        ),
        # An answer that quotes nothing of the note, though the model was shown it: the turn
        # stays, its evidence bundle (which holds the excerpt) goes.
        "unrelated": store.record_telemetry(
            tenant=tenant,
            kind="ask",
            query="boiler?",
            latency_ms=1,
            answer="Serviced in May.",
            evidence=SHOWN,
        ),
        "other tenant": store.record_telemetry(
            tenant="someone-else",
            kind="ask",
            query="q",
            latency_ms=1,
            answer="[[Quince Marmalade]]",
            evidence=SHOWN,  # theirs: neither counted nor deleted
        ),
    }
    # The LLM log keeps prompts redacted: the e-mail address is [EMAIL] there.
    prompt = "Sources:\n\n[1] Quince Marmalade\nWrite to [EMAIL] for the jars.\n\nQuestion: jars?"
    ids["call"] = store.log_call_started(
        request_id="r", purpose="answer", model="m", persona="analyst", prompt=prompt
    )
    store.log_call_finished(
        ids["call"], response="Ask by e-mail.", prompt_tokens=9, completion_tokens=3,
        latency_ms=5, outcome="ok",
    )  # fmt: skip
    ids["other call"] = store.log_call_started(
        request_id="r", purpose="answer", model="m", persona="analyst", prompt="boiler sources"
    )
    # Another tenant's call quoting the same passage is theirs: neither counted nor erased.
    ids["other tenant call"] = store.log_call_started(
        request_id="r", purpose="answer", model="m", persona="a", prompt=THEIR_PROMPT, tenant="x"
    )
    conversation = store.create_conversation(tenant, "jam", "friend")
    store.add_message(
        tenant, conversation, "assistant", "Seven jars.",
        [Citation(TITLE, f"{EPISODE}-1", EPISODE, "Seven jars", "verbatim")],
    )  # fmt: skip
    ids["conversation"] = conversation
    return ids


def test_quotes_are_recognised_through_whitespace_case_and_redaction() -> None:
    quotes = NoteQuotes(EPISODE, TITLE, TEXT)
    assert quotes("SEVEN jars went to the cellar\n shelf behind the bicycles")
    assert quotes("Write to [EMAIL] for the jars.")
    assert quotes(f"see {EPISODE}") and quotes("as [[quince marmalade]] says")
    assert not quotes("Jars") and not quotes("a quince") and not quotes("")


async def test_forget_note_purges_telemetry_and_the_llm_log_and_says_so(
    served: tuple[Any, Orchestrator, ForgettingMemory],
) -> None:
    stub, context, memory = served
    ids = seed(context)
    rows = context.store.query

    preview = await stub.ForgetNote(pb.ForgetNoteRequest(note=TITLE, dry_run=True))
    assert preview.dry_run and not preview.complete
    lines = {(c.store, c.what): (c.removed, c.remaining) for c in preview.counts}
    assert lines[("telemetry", "turns quoting or citing it")] == (1, 1)
    assert lines[("telemetry", "retrieval rows of its chunks")] == (2, 2)
    assert lines[("llm_log", "model calls quoting it (text erased)")] == (1, 1)
    assert lines[("evidence", "answer bundles showing or quoting it")] == (1, 1)
    assert EPISODE in memory.notes and len(rows("SELECT * FROM telemetry_turns")) == 4

    receipt = await stub.ForgetNote(pb.ForgetNoteRequest(note="kitchen/Quince Marmalade.md"))
    assert receipt.complete and not receipt.dry_run
    assert (receipt.episode_id, receipt.title, receipt.tombstoned) == (EPISODE, TITLE, True)
    lines = {(c.store, c.what): (c.removed, c.remaining) for c in receipt.counts}
    assert lines == {
        ("retrieval (fake)", "chunks"): (2, 0),
        ("telemetry", "turns quoting or citing it"): (1, 0),
        ("telemetry", "retrieval rows of its chunks"): (2, 0),
        ("llm_log", "model calls quoting it (text erased)"): (1, 0),
        ("evidence", "answer bundles showing or quoting it"): (1, 0),
    }
    assert [c.found_after for c in receipt.checks] == [0, 0]
    assert receipt.checks[-1].found_before == 5  # 1 turn + 2 retrieval rows + 1 call + 1 bundle
    bundles = rows("SELECT turn_id, tenant FROM evidence")
    assert [(r["turn_id"], r["tenant"]) for r in bundles] == [(ids["other tenant"], "someone-else")]
    assert list(receipt.conversations_citing) == [ids["conversation"]]
    assert receipt.scrubbed  # the fake retrieval scrubbed, and so did the orchestrator's WAL
    state = context.settings.state_path
    for file in (state, state.with_name(state.name + "-wal")):
        if file.exists():
            assert b"Write to [EMAIL] for the jars" not in file.read_bytes(), file

    turns = {r["id"] for r in rows("SELECT id FROM telemetry_turns")}
    assert turns == {ids["searched"], ids["unrelated"], ids["other tenant"]}
    items = {r["item_id"] for r in rows("SELECT item_id FROM telemetry_retrievals")}
    assert items == {"other-1"}  # other-0 went with the quoting turn
    calls = {r["id"]: (r["prompt"], r["response"], r["prompt_tokens"]) for r in rows(
        "SELECT * FROM llm_log")}  # fmt: skip
    assert calls[ids["call"]] == (ERASED, ERASED, 9)  # the call stays in the audit, its text not
    assert calls[ids["other call"]][0] == "boiler sources"
    assert calls[ids["other tenant call"]][0] == THEIR_PROMPT

    with pytest.raises(grpc.aio.AioRpcError) as again:
        await stub.ForgetNote(pb.ForgetNoteRequest(note=TITLE))
    assert again.value.code() == grpc.StatusCode.NOT_FOUND
    assert "episode id, vault path or title" in (again.value.details() or "")


async def test_a_forget_that_leaves_something_is_not_complete(
    served: tuple[Any, Orchestrator, ForgettingMemory],
) -> None:
    stub, _, memory = served
    memory.leave = 1
    receipt = await stub.ForgetNote(pb.ForgetNoteRequest(note=EPISODE))
    assert not receipt.complete
    [left] = [c for c in receipt.counts if c.remaining]
    assert (left.store, left.what, left.remaining) == ("retrieval (fake)", "chunks", 1)


async def test_delete_thread_removes_its_turns(
    served: tuple[Any, Orchestrator, ForgettingMemory],
) -> None:
    stub, context, _ = served
    first = await stub.CreateTurn(pb.CreateTurnRequest(text="where are the jars?"))
    thread = first.turn.thread_id
    await stub.CreateTurn(pb.CreateTurnRequest(thread_id=thread, text="and the quince?"))
    kept = await stub.CreateTurn(pb.CreateTurnRequest(text="another thread"))
    reply = await stub.DeleteThread(pb.DeleteThreadRequest(thread_id=thread))
    assert (reply.turns_deleted, reply.turns_remaining) == (2, 0)
    assert context.store.query("SELECT COUNT(*) FROM turns WHERE thread_id = ?", thread)[0][0] == 0
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await stub.ListTurns(pb.ListTurnsRequest(thread_id=thread))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    listed = await stub.ListTurns(pb.ListTurnsRequest(thread_id=kept.turn.thread_id))
    assert len(listed.turns) == 1
    for request, code in [
        (pb.DeleteThreadRequest(thread_id=thread), grpc.StatusCode.NOT_FOUND),
        (pb.DeleteThreadRequest(thread_id=""), grpc.StatusCode.INVALID_ARGUMENT),
        (
            pb.DeleteThreadRequest(tenant="someone-else", thread_id=kept.turn.thread_id),
            grpc.StatusCode.NOT_FOUND,
        ),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.DeleteThread(request)
        assert err.value.code() == code

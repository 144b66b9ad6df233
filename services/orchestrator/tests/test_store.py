"""The orchestrator's state: conversations (B11), queued turns (B13), telemetry (B12). The
contract suite of both backends: every test here runs on SQLite and on PostgreSQL (``state``)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.conversation.conversations import FORGOTTEN_CONVERSATION
from memex.orchestrator.memory.items import Citation
from memex.orchestrator.state import migrations
from memex.orchestrator.state.store import ERASED, OrchestratorStore
from memex.shared.errors import FailedPrecondition, NotFound, Unavailable
from memex.shared.settings import describe_invalid
from memex.testing import free_port

from .conftest import older_database

CITATION = Citation(ref="[[Note]]", item_id="c1", episode_id="e1", quote="q", support="verbatim")


@pytest.fixture
def store(state: Path | str) -> Iterator[OrchestratorStore]:
    store = OrchestratorStore(state)
    yield store
    store.close()


def test_conversations_survive_a_restart_and_forget_removes_everything(state: Path | str) -> None:
    store = OrchestratorStore(state)
    conversation = store.create_conversation("me", "The deposit", "friend")
    store.add_message("me", conversation, "user", "what about the deposit?")
    store.add_message("me", conversation, "assistant", "It was £800.", [CITATION], "smollm2", 812.5)
    store.record_telemetry(
        tenant="me",
        kind="chat",
        query="what about the deposit?",
        latency_ms=900,
        conversation_id=conversation,
        retrievals=[("c1", 0.03, {"vector": 0.8}, True)],
    )
    store.close()

    reopened = OrchestratorStore(state)
    [listed] = reopened.list_conversations("me")
    assert (listed.title, listed.persona, listed.message_count) == ("The deposit", "friend", 2)
    _, messages = reopened.get_conversation("me", conversation)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[1].citations[0]["support"] == "verbatim"
    assert messages[1].model == "smollm2"

    reopened.delete_conversation("me", conversation)
    assert reopened.list_conversations("me") == []
    assert reopened.query("SELECT COUNT(*) FROM messages")[0][0] == 0
    assert reopened.query("SELECT COUNT(*) FROM telemetry_turns")[0][0] == 0
    assert reopened.query("SELECT COUNT(*) FROM telemetry_retrievals")[0][0] == 0
    with pytest.raises(NotFound):
        reopened.get_conversation("me", conversation)
    reopened.close()


def test_deleting_a_conversation_erases_the_text_of_its_model_calls(
    store: OrchestratorStore,
) -> None:
    conversation = store.create_conversation("me", "jars", "friend")
    other = store.create_conversation("me", "boiler", "friend")
    calls = {
        name: store.log_call_started(
            request_id="r",
            purpose="chat",
            model="m",
            persona="p",
            prompt=f"about {name}",
            tenant=tenant,
            conversation_id=conversation_id,
        )
        for name, tenant, conversation_id in [
            ("jars", "me", conversation),
            ("boiler", "me", other),
            ("an ask", "me", ""),
            ("bob's", "bob", conversation),  # another tenant's row is never touched
        ]
    }

    store.delete_conversation("me", conversation)

    prompts = {r["id"]: r["prompt"] for r in store.query("SELECT id, prompt FROM llm_log")}
    assert prompts == {
        calls["jars"]: FORGOTTEN_CONVERSATION,
        calls["boiler"]: "about boiler",
        calls["an ask"]: "about an ask",
        calls["bob's"]: "about bob's",
    }


def test_tenants_are_kept_apart(store: OrchestratorStore) -> None:
    conversation = store.create_conversation("alice", "t", "friend")
    with pytest.raises(NotFound):
        store.get_conversation("bob", conversation)
    with pytest.raises(NotFound):
        store.delete_conversation("bob", conversation)
    turn = store.create_turn("alice", "", "hi", "hi")
    with pytest.raises(NotFound):
        store.get_turn("bob", turn.id)
    assert store.list_conversations("bob") == []


def test_turns_are_claimed_oldest_first_and_answered_exactly_once(store: OrchestratorStore) -> None:
    first = store.create_turn("me", "", "first?", "first?")
    second = store.create_turn("me", first.thread_id, "second?", "")
    claimed = store.claim_next("worker-a", lease_seconds=60)
    assert claimed is not None and claimed.id == first.id and claimed.state == "thinking"
    assert store.answer_turn(claimed, "worker-a", "answer one", [CITATION])
    assert not store.answer_turn(claimed, "worker-a", "again", [])  # already answered
    turns = store.list_turns("me", first.thread_id)
    assert [(t.role, t.state) for t in turns] == [
        ("user", "answered"),
        ("user", "pending"),
        ("assistant", "answered"),
    ]
    next_claim = store.claim_next("worker-a", 60)
    assert next_claim is not None and next_claim.id == second.id
    assert [t.text for t in store.prior_turns(next_claim)] == ["first?", "answer one"]


def test_two_workers_never_claim_the_same_turn(state: Path | str) -> None:
    setup = OrchestratorStore(state)
    for i in range(40):
        setup.create_turn("me", "", f"question {i}", f"q{i}")
    claims: dict[str, list[str]] = {"a": [], "b": []}

    def work(name: str) -> None:
        store = OrchestratorStore(state)  # its own connection(s), as a worker process would
        while (turn := store.claim_next(name, 60)) is not None:
            claims[name].append(turn.id)
        store.close()

    workers = [threading.Thread(target=work, args=(n,)) for n in claims]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(claims["a"]) + len(claims["b"]) == 40
    assert not set(claims["a"]) & set(claims["b"])
    setup.close()


def test_a_dead_workers_turn_goes_back_to_pending_and_its_late_answer_is_refused(
    store: OrchestratorStore,
) -> None:
    store.create_turn("me", "", "question", "q")
    orphan = store.claim_next("dead-worker", lease_seconds=-1)  # lease already expired
    assert orphan is not None
    assert store.requeue_expired() == 1
    retry = store.claim_next("new-worker", 60)
    assert retry is not None and retry.id == orphan.id
    assert not store.answer_turn(orphan, "dead-worker", "late", [])
    assert store.answer_turn(retry, "new-worker", "on time", [])
    assert [t.text for t in store.list_turns("me", retry.thread_id) if t.role == "assistant"] == [
        "on time"
    ]


def test_failures_are_recorded_truncated(store: OrchestratorStore) -> None:
    store.create_turn("me", "", "question", "q")
    turn = store.claim_next("w", 60)
    assert turn is not None
    assert store.fail_turn(turn, "w", "boom " * 500)
    failed = store.get_turn("me", turn.id)
    assert failed.state == "error" and len(failed.error) == 500 and failed.error.startswith("boom")


def test_a_newer_schema_is_refused(state: Path | str) -> None:
    store = OrchestratorStore(state)
    if store.dialect == "sqlite":
        store.query("PRAGMA user_version = 99")
    else:
        store.query("INSERT INTO memex_schema (version) VALUES (99)")
    store.close()
    with pytest.raises(FailedPrecondition, match="newer than this memex"):
        OrchestratorStore(state)


def test_an_older_database_is_migrated_and_keeps_its_rows(state: Path | str) -> None:
    before = older_database(state, below=2)
    with before.transaction() as db:
        db.execute(
            "INSERT INTO telemetry_turns (id, tenant, kind, query, latency_ms, created_at) "
            "VALUES ('t1', 'me', 'search', 'q', 1.0, '2026-01-01')"
        )
    assert before.version() == 1
    before.close()
    store = OrchestratorStore(state)
    [row] = store.query("SELECT id, dropped_steps FROM telemetry_turns")
    assert (row["id"], row["dropped_steps"]) == ("t1", "[]")
    assert store.schema_version() == migrations()[-1][0] == migrations("postgres")[-1][0]
    store.close()


def test_unknown_threads_are_not_found(store: OrchestratorStore) -> None:
    with pytest.raises(NotFound):
        store.create_turn("me", "nope", "hi", "")
    with pytest.raises(NotFound):
        store.list_turns("me", "nope")


def test_a_database_from_before_migration_4_is_migrated_and_its_turns_withhold(
    state: Path | str,
) -> None:
    """Turns queued before include_sensitive was stored read False: the safe reading."""
    before = older_database(state, below=4)
    with before.transaction() as db:
        db.execute("INSERT INTO threads VALUES ('h1', 'me', 'old', '2026-01-01')")
        db.execute(
            "INSERT INTO turns (id, thread_id, role, text, state, seq, created_at) "
            "VALUES ('t1', 'h1', 'user', ?, 'pending', 1, '2026-01-01')",
            ("old?",),  # a parameter: the stores' SQL keeps ? out of its literals
        )
    before.close()
    store = OrchestratorStore(state)
    assert store.schema_version() == migrations()[-1][0] >= 4
    old = store.get_turn("me", "t1")
    assert (old.text, old.include_sensitive) == ("old?", False)
    assert store.create_turn("me", "h1", "new?", "", include_sensitive=True).include_sensitive
    claimed = store.claim_next("w1", 60)
    assert claimed is not None and (claimed.id, claimed.include_sensitive) == ("t1", False)
    store.close()


def test_a_notes_traces_are_found_and_purged(store: OrchestratorStore) -> None:
    cite = Citation(ref="[[Jars]]", item_id="ep1-0", episode_id="ep1", quote="", support="verbatim")
    turn = store.record_telemetry(
        tenant="me",
        kind="ask",
        query="where are the jars?",
        latency_ms=1,
        retrievals=[("ep1-0", 0.1, {}, True), ("other-1", 0.1, {}, False)],
    )
    unrelated = store.record_telemetry(
        tenant="me",
        kind="search",
        query="boiler",
        latency_ms=1,
        retrievals=[("ep1-3", 0.1, {}, False)],
    )
    call = store.log_call_started(
        request_id="r", purpose="synthesize", model="m", persona="p", prompt="the jars are here"
    )
    conversation = store.create_conversation("me", "jars", "friend")
    store.add_message("me", conversation, "assistant", "In the shed.", [cite])
    traces = store.note_traces("me", "ep1", ["ep1-0"], lambda text: "jars" in text)
    assert (traces.turns, traces.calls, traces.conversations) == ([turn], [call], [conversation])
    assert sorted(traces.retrievals) == sorted([(turn, "ep1-0"), (unrelated, "ep1-3")])
    store.purge_note_traces(traces)
    assert store.scrub()
    after = store.note_traces("me", "ep1", ["ep1-0"], lambda text: "jars" in text)
    assert (after.turns, after.retrievals, after.calls) == ([], [], [])
    [row] = store.query("SELECT prompt, response FROM llm_log")
    assert (row["prompt"], row["response"]) == (ERASED, ERASED)
    assert after.conversations == [conversation]  # the person's own: reported, never changed


def test_a_state_url_that_is_not_postgresql_is_refused_without_repeating_it() -> None:
    with pytest.raises(ValidationError) as bad:
        OrchestratorSettings(state_url="mysql://me:hunter2@db:3306/memex")
    message = describe_invalid(bad.value, OrchestratorSettings)
    assert message.startswith("invalid MEMEX_ORCHESTRATOR_STATE_URL: must be a PostgreSQL URL")
    assert "hunter2" not in message
    unset = OrchestratorSettings(state_url="")
    assert unset.state_url is None and unset.state_location == unset.state_path  # SQLite


def test_an_unreachable_postgresql_is_unavailable_and_named_without_its_password() -> None:
    port = free_port()
    with pytest.raises(Unavailable, match=f"127.0.0.1:{port}/memex") as down:
        OrchestratorStore(f"postgresql://me:hunter2@127.0.0.1:{port}/memex", connect_seconds=1)
    assert "hunter2" not in down.value.message


def test_a_postgresql_claim_skips_a_turn_another_transaction_holds(postgres_url: str) -> None:
    """The claim takes the oldest pending turn FOR UPDATE SKIP LOCKED: a row another worker's
    transaction holds is passed over at once, not waited for."""
    store = OrchestratorStore(postgres_url)
    first = store.create_turn("me", "", "first", "t")
    second = store.create_turn("me", "", "second", "t")
    with (
        psycopg.connect(postgres_url) as other,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        other.execute("SELECT id FROM turns WHERE id = %s FOR UPDATE", (first.id,))
        claimed = pool.submit(store.claim_next, "w", 60).result(timeout=10)  # no wait
        assert claimed is not None and claimed.id == second.id
    again = store.claim_next("w", 60)  # the other transaction ended: the first is free
    assert again is not None and again.id == first.id
    store.close()

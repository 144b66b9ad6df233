"""Prometheus metrics per stage and per outcome (SPEC B12), read back from the registry after real
asks, chats and searches over scripted stages."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import REGISTRY, generate_latest

from memex.orchestrator.conversation.chat import Delta, Meta
from memex.orchestrator.conversation.chat import Done as ChatDone
from memex.orchestrator.memory.policy import scope

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

PLAN = "You plan how to look up"
ANSWER = "How to answer:"
CHAT = "How to reply:"


class Deltas:
    """Counter and histogram values before a block, compared after it."""

    def __init__(self, *samples: tuple[str, dict[str, str]]) -> None:
        self._samples = samples
        self._before = [self._value(s) for s in samples]

    @staticmethod
    def _value(sample: tuple[str, dict[str, str]]) -> float:
        return REGISTRY.get_sample_value(*sample) or 0.0

    def __call__(self) -> list[float]:
        return [self._value(s) - b for s, b in zip(self._samples, self._before, strict=True)]


def stage(name: str) -> tuple[str, dict[str, str]]:
    return ("memex_orchestrator_stage_seconds_count", {"stage": name})


def counter(name: str, **labels: str) -> tuple[str, dict[str, str]]:
    return (f"memex_orchestrator_{name}_total", labels)


def plan_and_answer() -> dict[str, list[str]]:
    plan = {
        "steps": [
            {"tool": "search_vault", "query": "deposit"},
            {"tool": "query_records", "collection": "passwords"},  # dropped
        ]
    }
    return {PLAN: [json.dumps(plan)], ANSWER: ["The deposit is £800 [1] [7]."]}  # [7]: dropped


async def test_an_ask_is_timed_per_stage_and_counted_by_outcome(tmp_path: Path) -> None:
    # A remote reasoner, so the sensitive note is withheld.
    o = make_orchestrator(
        tmp_path,
        ScriptedReasoner(plan_and_answer(), local=False),
        FakeMemory(NOTES),
        plan_hop="always",
    )
    delta = Deltas(
        stage("plan"),
        stage("ask_first_words"),
        stage("retrieve"),
        stage("synthesize"),
        stage("ground_check"),
        stage("revise"),
        counter("asks", outcome="answered"),
        counter("dropped_plan_steps"),
        counter("dropped_citations", kind="ask"),
        counter("withheld_sensitive", kind="ask"),
        counter("abstentions", reason="uncited"),
    )
    result = await o.asker.ask("me", "What did we agree about the deposit?")
    assert not result.abstained and result.withheld == 1
    assert delta() == [1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0]
    exposed = generate_latest(REGISTRY).decode()
    assert 'memex_orchestrator_stage_seconds_bucket{le="0.001",stage="plan"}' in exposed


async def test_abstentions_are_counted_by_reason(tmp_path: Path) -> None:
    empty = make_orchestrator(tmp_path / "a", ScriptedReasoner(plan_and_answer()), FakeMemory([]))
    ungrounded = make_orchestrator(
        tmp_path / "b",
        ScriptedReasoner({PLAN: ['{"steps": []}'], ANSWER: ["Guess."]}),
        FakeMemory(NOTES),
    )
    delta = Deltas(
        counter("abstentions", reason="empty"),
        counter("abstentions", reason="uncited"),
        counter("asks", outcome="abstained"),
    )
    assert (await empty.asker.ask("me", "anything?")).abstained
    assert (await ungrounded.asker.ask("me", "anything?")).abstained
    assert delta() == [1, 1, 2]


def chat_reply() -> list[str]:
    return ["The deposit ", "is £800 [1]", " [9]."]  # [9] names nothing shown: dropped


async def test_a_chat_is_timed_to_its_first_token_and_counted(tmp_path: Path) -> None:
    o = make_orchestrator(
        tmp_path, ScriptedReasoner({CHAT: chat_reply()}, local=False), FakeMemory(NOTES)
    )
    delta = Deltas(
        stage("chat_retrieve"),
        stage("chat_first_token"),
        stage("chat_stream"),
        counter("chats", outcome="done"),
        counter("dropped_citations", kind="chat"),
        counter("withheld_sensitive", kind="chat"),
    )
    events = [e async for e in o.chatter.chat("me", "", "the deposit?")]
    assert isinstance(events[-1], ChatDone)
    assert delta() == [1, 1, 1, 1, 1, 1]


async def test_a_chat_cancelled_mid_reply_keeps_the_question_and_stores_no_half_answer(
    tmp_path: Path,
) -> None:
    o = make_orchestrator(tmp_path, ScriptedReasoner({CHAT: chat_reply()}), FakeMemory(NOTES))
    delta = Deltas(counter("chats", outcome="cancelled"), counter("chats", outcome="done"))
    stream = o.chatter.chat("me", "", "the deposit?")
    meta = await anext(stream)
    assert isinstance(meta, Meta)
    assert isinstance(await anext(stream), Delta)
    await stream.aclose()  # what a client going away does to the servicer's stream
    assert delta() == [1, 0]
    _, messages = o.store.get_conversation("me", meta.conversation_id)
    assert [(m.role, m.text) for m in messages] == [("user", "the deposit?")]
    [call] = o.store.query("SELECT purpose, outcome FROM llm_log")
    assert (call["purpose"], call["outcome"]) == ("chat", "cancelled")


async def test_search_is_timed(tmp_path: Path) -> None:
    o = make_orchestrator(tmp_path, ScriptedReasoner({}), FakeMemory(NOTES))
    delta = Deltas(stage("search"))
    await o.reads.search(scope("me"), "deposit", k=3)
    assert delta() == [1]


async def test_the_optional_stages_are_timed_too(tmp_path: Path) -> None:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "all.toml").write_text(
        'name = "all"\ndescription = "Every stage."\nchunks = 5\nstages = ["reframe", "plan", '
        '"retrieve", "seek_counter_evidence", "synthesize", "ground_check", "revise"]\n'
        'system_prompt = "You answer precisely."\n'
    )
    replies = plan_and_answer()
    replies["Rewrite the question"] = ["the deposit?"]
    replies["AGAINST"] = ["no deposit"]
    o = make_orchestrator(tmp_path, ScriptedReasoner(replies), FakeMemory(NOTES))
    delta = Deltas(stage("reframe"), stage("counter_evidence"), stage("revise"))
    result = await o.asker.ask("me", "deposit?", persona_name="all")
    assert result.stages[0] == "reframe" and result.stages[-1] == "revise"
    assert delta() == [1, 1, 1]

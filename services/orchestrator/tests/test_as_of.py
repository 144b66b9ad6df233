"""An ask or a chat message as of a day (docs/as-of.md): every stage reads that day, bad days are
refused before any model call, and the next ask or message reads today again."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memex.orchestrator.answer.briefing import today_line
from memex.orchestrator.conversation.chat import ChatEvent, Done, Meta
from memex.orchestrator.memory import as_of
from memex.orchestrator.ports import SearchSpec
from memex.shared.errors import InvalidArgument

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

GOOD = ["The deposit is £800 [1]."]


def test_parse_reads_a_past_day_and_refuses_anything_else() -> None:
    assert as_of.parse("") is None
    assert as_of.parse("2026-05-01") == dt.date(2026, 5, 1)
    for bad, says in [
        ("2026-5-1", "YYYY-MM-DD"),
        ("May 1", "YYYY-MM-DD"),
        ("2999-01-01", "after today"),
    ]:
        with pytest.raises(InvalidArgument, match=says):
            as_of.parse(bad)


async def test_an_ask_as_of_a_day_searches_and_briefs_that_day(tmp_path: Path) -> None:
    seen: list[str] = []

    def on_search(spec: SearchSpec) -> None:
        seen.append(as_of.wire())  # what GrpcMemory puts in SearchRequest.as_of

    model = ScriptedReasoner({"How to answer:": GOOD})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES, on_search=on_search))
    result = await o.asker.ask(
        "me", "What did we agree about the deposit?", include_sensitive=True, as_of="2026-02-10"
    )
    assert result.as_of == "2026-02-10"
    assert seen and set(seen) == {"2026-02-10"}
    prompt = model.calls[0].messages[-1].content
    assert today_line(dt.date(2026, 2, 10)) in prompt  # "Today is Tuesday 10 February 2026."

    seen.clear()
    again = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)
    assert again.as_of == "" and set(seen) == {""}
    assert today_line() in model.calls[-1].messages[-1].content


async def test_a_bad_as_of_is_refused_before_any_model_call(tmp_path: Path) -> None:
    model = ScriptedReasoner({"How to answer:": GOOD})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    with pytest.raises(InvalidArgument, match="YYYY-MM-DD"):
        await o.asker.ask("me", "What about the deposit?", as_of="last Tuesday")
    assert model.calls == []


async def test_a_chat_message_as_of_a_day_reads_that_day_and_the_next_reads_now(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    def on_search(spec: SearchSpec) -> None:
        seen.append(as_of.wire())

    model = ScriptedReasoner({"How to reply:": ["Dana keeps the deposit: £800 [1]."]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES, on_search=on_search))

    async def chat(conversation: str, day: str = "") -> list[ChatEvent]:
        return [
            e
            async for e in o.chatter.chat(
                "me", conversation, "Who keeps the deposit?", include_sensitive=True, as_of=day
            )
        ]

    first = await chat("", "2026-02-10")
    meta = first[0]
    assert isinstance(meta, Meta) and meta.as_of == "2026-02-10"
    assert isinstance(first[-1], Done)
    assert seen and set(seen) == {"2026-02-10"}
    assert today_line(dt.date(2026, 2, 10)) in model.calls[0].messages[-1].content

    seen.clear()
    # The same conversation, now: the day held for the first reply only.
    second = await chat(meta.conversation_id)
    assert isinstance(second[0], Meta) and second[0].as_of == ""
    assert set(seen) == {""} and today_line() in model.calls[-1].messages[-1].content

    calls = len(model.calls)
    with pytest.raises(InvalidArgument, match="YYYY-MM-DD"):
        await chat(meta.conversation_id, "last Tuesday")
    assert len(model.calls) == calls  # refused before any event or model call

"""`memex ask` and `memex chat` against a real in-process gRPC server on port 0 whose servicer is a
fake: what they send, what they print piped (text and --json) and on a terminal (the draft, then
what the check changed), and their exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .support.cli_harness import ABSTENTION, memex, on_terminal


async def test_ask_renders_support_labels(stack: Any) -> None:
    env, _, _ = stack
    code, out, _ = await memex(env, "ask", "How much came back?")
    assert code == 0
    assert '[1] [[Flat Deposit]] (verbatim) "£1,030"' in out
    assert "[2] events:ev-1 (paraphrase)" in out
    assert "[3] [[Journal]] (reading between the lines)" in out
    code, out, _ = await memex(env, "ask", "q", "--json")
    assert json.loads(out)["citations"][2]["support"] == "SUPPORT_INFERENCE"
    code, _, err = await memex(env, "ask", "q", "--limit", "-1")
    assert code == 2 and "limit" in err
    code, _, _ = await memex(env, "ask", "   ")
    assert code == 2


async def test_ask_and_chat_use_sensitive_notes_only_when_told_as_reads_do(stack: Any) -> None:
    env, _, orchestrator = stack
    assert (await memex(env, "ask", "q", "--json"))[0] == 0
    assert (await memex(env, "chat", "hi", "--json"))[0] == 0
    assert not orchestrator.asks[-1].include_sensitive
    assert not orchestrator.chats[-1].include_sensitive
    assert (await memex(env, "ask", "q", "--json", "--include-sensitive"))[0] == 0
    assert (await memex(env, "chat", "--include-sensitive", stdin="one\ntwo\n"))[0] == 0
    assert orchestrator.asks[-1].include_sensitive
    assert [c.include_sensitive for c in orchestrator.chats[-2:]] == [True, True]


async def test_chat_session_streams_and_keeps_the_conversation(stack: Any) -> None:
    env, _, orchestrator = stack
    code, out, _ = await memex(env, "chat", stdin="hello\n\n/new\nagain\nthird\n/exit\nignored\n")
    assert code == 0
    assert out.count("Sources:") == 3
    assert "You said: hello" in out and "(reading between the lines)" in out
    assert [c.message for c in orchestrator.chats] == ["hello", "again", "third"]
    # /new starts over; otherwise each turn continues the conversation the server named.
    assert [c.conversation_id for c in orchestrator.chats] == ["", "", "conv-2"]
    code, out, _ = await memex(env, "chat", "one shot", "--json")
    assert code == 0
    turn = json.loads(out)
    assert turn["reply"] == "You said: one shot"
    assert [c["support_label"] for c in turn["citations"]] == [
        "verbatim",
        "paraphrase",
        "reading between the lines",
    ]


async def test_chat_as_of_a_day_sends_it_with_every_message_and_says_so(stack: Any) -> None:
    env, _, orchestrator = stack
    code, out, _ = await memex(env, "chat", "--as-of", "2026-02-01", stdin="one\ntwo\n")
    assert code == 0
    assert [c.as_of for c in orchestrator.chats[-2:]] == ["2026-02-01", "2026-02-01"]
    assert out.count("As of 2026-02-01: You said:") == 2
    code, out, _ = await memex(
        env, "chat", "hi", "--as-of", "2026-02-01", "--json", "--tenant", "acme"
    )
    assert code == 0 and json.loads(out)["as_of"] == "2026-02-01"
    assert orchestrator.chats[-1].tenant == "acme"
    code, out, _ = await memex(env, "chat", "hi", "--json")
    assert "as_of" not in json.loads(out) and orchestrator.chats[-1].as_of == ""


@pytest.mark.parametrize(
    ("name", "exit_code"),
    [("UNAVAILABLE", 3), ("NOT_FOUND", 4), ("DEADLINE_EXCEEDED", 5), ("INTERNAL", 1)],
)
async def test_a_chat_error_event_is_shown_by_name_and_sets_the_exit_code(
    stack: Any, name: str, exit_code: int
) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "chat", f"error:{name}")
    assert code == exit_code, err
    assert f"[error: {name}: as asked]" in err
    code, out, _ = await memex(env, "chat", f"error:{name}", "--json")
    assert code == exit_code
    assert json.loads(out)["error_code"] == name


async def test_chat_on_a_terminal_prompts_and_streams(stack: Any) -> None:
    env, _, orchestrator = stack
    code, screen = await on_terminal(env, "chat", "--persona", "coach", typed=b"hello\n/exit\n")
    assert code == 0
    assert "memex chat (coach)" in screen and "/new" in screen
    assert "you> " in screen
    assert "memex> You said: hello" in screen
    assert "(reading between the lines)" in screen
    assert [c.persona for c in orchestrator.chats] == ["coach"]


async def test_ask_on_a_terminal_shows_the_draft_then_what_the_check_changed(stack: Any) -> None:
    env, _, _ = stack
    code, screen = await on_terminal(env, "ask", "How much came back?")
    assert code == 0
    assert screen.count("£1,030 came back.") == 1  # the draft stood: not printed twice
    assert "could not check" not in screen and "checked against" not in screen
    assert '[1] [[Flat Deposit]] (verbatim) "£1,030"' in screen
    code, screen = await on_terminal(env, "ask", "unsure")
    assert code == 0
    _, _, checked = screen.partition("Maybe £900, see [[Diary]].\n")
    assert checked, screen
    assert checked.startswith(
        "\n— memex could not check that against your notes:\n" + ABSTENTION + "\n"
    ), checked
    assert "dropped from the draft, naming nothing memex showed the model: [[Diary]]" in checked
    assert "abstained" in checked
    code, screen = await on_terminal(env, "ask", "second look")
    assert code == 0
    set_aside = "I don't know.\n— that draft is set aside (reading all 3 sources)\n"
    assert set_aside + "£1,030 came back.\n" in screen, screen
    assert "checked against" not in screen  # the new draft stood
    code, screen = await on_terminal(env, "ask", "How much came back?", "--as-of", "2026-02-01")
    assert code == 0 and "As of 2026-02-01:\n£1,030 came back." in screen, screen
    code, screen = await on_terminal(env, "ask", "cut off")
    assert code == 1
    assert "£1,030 came back.\n" in screen and "unfinished draft" in screen
    assert "the answer ended before it was finished" in screen


async def test_ask_piped_prints_only_the_checked_answer(stack: Any) -> None:
    env, _, _ = stack
    code, out, err = await memex(env, "ask", "unsure")
    assert code == 0
    assert out == ABSTENTION + "\n"  # no draft, no notes on it: what a script should read
    assert "abstained" in err
    code, out, _ = await memex(env, "ask", "unsure", "--json")
    reply = json.loads(out)
    assert reply["answer"] == ABSTENTION and reply["abstained"] is True
    code, out, _ = await memex(env, "ask", "How much came back?")
    assert out.startswith("£1,030 came back.\n\nSources:\n")


async def test_ask_falls_back_to_the_one_shot_call_on_an_older_stack(stack: Any) -> None:
    env, _, _ = stack
    code, out, _ = await memex(env, "ask", "old stack")
    assert code == 0 and out.startswith("£1,030 came back.")
    code, _, err = await memex(env, "ask", "cut off")
    assert code == 1 and "the answer ended before it was finished" in err

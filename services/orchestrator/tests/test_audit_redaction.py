"""What the LLM log keeps of sensitive notes a local model was shown (SPEC B3, B4): a marker
naming the episode, never the text; the audit row itself is always written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memex.orchestrator.conversation.chat import Meta
from memex.orchestrator.record.redaction import Sensitive, redact

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

ANSWER = "How to answer:"
CHAT = "How to reply:"
# NOTES briefs the sensitive therapy note as source [3].
SENSITIVE_REPLY = ["The deposit is £800 [1]. You talked through the panic ", "attacks [3]."]
THERAPY_WORDS = ("panic", "Talked through", "talked through")


def logged(rows: list[sqlite3.Row]) -> str:
    return " ".join(r["prompt"] + r["response"] for r in rows)


async def test_a_local_model_sees_a_sensitive_note_but_the_log_keeps_only_its_episode(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({ANSWER: SENSITIVE_REPLY})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask(
        "me", "What did I talk about, and what is the deposit?", include_sensitive=True
    )
    assert "panic" in model.calls[0].messages[-1].content  # the local model saw it (B3)
    assert result.withheld == 0

    [row] = o.store.query("SELECT * FROM llm_log")
    text = row["prompt"] + row["response"]
    assert not any(words in text for words in THERAPY_WORDS)
    assert "[3] [SENSITIVE episode=ep-therapy]" in row["prompt"]  # which source, by episode
    assert row["response"] == "The deposit is £800 [1]. [SENSITIVE episode=ep-therapy]"
    assert "Agreed with Dana that the deposit is £800" in row["prompt"]  # the rest is kept
    assert "for example [2]" in row["prompt"]  # the rules' example numbers are not redacted
    assert (row["model"], row["outcome"], row["completion_tokens"]) == ("scripted", "ok", 5)
    assert row["prompt_tokens"] > 0 and row["purpose"] == "ask_synthesize"
    assert row["tenant"] == "me"  # so forgetting a note of another tenant never reaches it


async def test_a_chat_logs_neither_the_sensitive_note_nor_a_reply_that_repeats_it(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({CHAT: SENSITIVE_REPLY})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    first = [e async for e in o.chatter.chat("me", "", "How am I doing?", include_sensitive=True)]
    assert isinstance(first[0], Meta)
    # The stored reply repeats the note; the next turn's prompt carries it in the history.
    _ = [
        e
        async for e in o.chatter.chat(
            "me", first[0].conversation_id, "And the deposit?", include_sensitive=True
        )
    ]
    assert "panic" in model.calls[1].messages[-2].content  # history, as the model saw it

    rows = o.store.query("SELECT * FROM llm_log ORDER BY created_at")
    assert len(rows) == 2 and all(r["outcome"] == "ok" for r in rows)
    assert not any(words in logged(rows) for words in THERAPY_WORDS)
    assert all("[SENSITIVE episode=ep-therapy]" in r["prompt"] for r in rows)


async def test_items_withheld_from_a_remote_model_are_not_in_the_log_either(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({ANSWER: SENSITIVE_REPLY}, local=False)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did I talk about?")
    assert result.withheld == 1
    [row] = o.store.query("SELECT * FROM llm_log")
    assert "panic" not in row["prompt"] + row["response"]


def test_redact_replaces_a_sensitive_block_and_sentences_citing_or_repeating_it() -> None:
    note = Sensitive(
        "[SENSITIVE episode=ep-1]", ("Therapy\nTalked through the panic attacks.",), number=2
    )
    prompt = "Rules: cite like [2].\n\n[2] Therapy\nTalked through the panic attacks.\n\nHow am I?"
    assert redact(prompt, [note]) == (
        "Rules: cite like [2].\n\n[2] [SENSITIVE episode=ep-1]\n\nHow am I?"
    )
    reply = "You are well [1]. It helps, see [1, 2]. We talked through panic attacks again."
    assert redact(reply, [note], by_number=True) == (
        "You are well [1]. [SENSITIVE episode=ep-1] [SENSITIVE episode=ep-1]"
    )
    assert redact("Panic attacks?", [note], by_number=True) == "Panic attacks?"  # too short

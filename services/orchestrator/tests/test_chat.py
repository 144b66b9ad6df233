"""Chat (SPEC B7, B8, B9, B11) with a scripted model streaming in awkward chunks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memex.orchestrator.conversation.chat import (
    ChatEvent,
    Chatter,
    Citations,
    Delta,
    Done,
    Meta,
)
from memex.orchestrator.conversation.conversations import FORGOTTEN_CONVERSATION
from memex.orchestrator.memory.policy import WITHHELD_READ, WITHHELD_REPLY
from memex.shared.errors import InvalidArgument, NotFound, Unavailable

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator

CHAT = "How to reply:"
REPLY = [
    "<thi",
    "nk>let me think</think>\n",
    "Dana keeps the ",
    "deposit: £800.",
    "\n@@CITA",
    'TIONS@@\n```json\n[{"episode": "ep-deposit", ',
    '"quote": "deposit is £800", "support": "paraphrase"}, {"episode": "ep-fake", "quote": "x"}]\n```',
]


async def collect(
    chatter: Chatter,
    conversation: str,
    message: str,
    persona: str = "",
    *,
    include_sensitive: bool = True,
) -> list[ChatEvent]:
    """Every event of one chat; by default as the owner asks, sensitive notes included (these
    tests are about chat's shape; the tests below about withholding say otherwise)."""
    return [
        event
        async for event in chatter.chat(
            "me", conversation, message, persona, include_sensitive=include_sensitive
        )
    ]


async def test_a_chat_streams_meta_deltas_citations_done_and_is_stored(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: REPLY})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    events = await collect(
        o.chatter, "", "What about the deposit we agreed with Dana last winter, again?"
    )

    assert (
        isinstance(events[0], Meta)
        and events[0].persona == "friend"
        and events[0].model == "scripted"
    )
    deltas = [e.text for e in events if isinstance(e, Delta)]
    assert "".join(deltas) == "Dana keeps the deposit: £800.\n"
    assert all("@" not in d and "<" not in d for d in deltas)
    citations = next(e for e in events if isinstance(e, Citations))
    assert [(c.ref, c.support) for c in citations.citations] == [("[[Flat lease]]", "verbatim")]
    done = events[-1]
    assert isinstance(done, Done) and done.chunks_considered == 4

    conversation, messages = o.store.get_conversation("me", events[0].conversation_id)
    assert conversation.title == "What about the deposit we agreed with Dana last winter,"
    assert [(m.role, m.text) for m in messages] == [
        ("user", "What about the deposit we agreed with Dana last winter, again?"),
        # the reply cited nothing itself: the source it was attributed to is written after it
        ("assistant", "Dana keeps the deposit: £800. [[Flat lease]]"),
    ]
    assert messages[1].citations[0]["episode_id"] == "ep-deposit"
    [row] = o.store.query("SELECT kind, conversation_id FROM telemetry_turns")
    assert (row["kind"], row["conversation_id"]) == ("chat", conversation.id)


async def test_the_briefing_has_the_persona_prompt_and_the_last_12_messages(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["fine.\n@@CITATIONS@@\n[]"]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    chatter = o.chatter
    first = await collect(chatter, "", "message 0")
    conversation = first[0].conversation_id  # type: ignore[union-attr]
    for n in range(1, 8):
        await collect(chatter, conversation, f"message {n}")
    messages = model.calls[-1].messages
    assert messages[0].role == "system" and "thoughtful confidant" in messages[0].content
    assert len(messages) == 1 + 12 + 1
    assert messages[1].content == "message 1"  # 16 stored before this turn's question; the last 12
    assert messages[-1].content.startswith("Today is ") and messages[-1].content.endswith(
        "message 7"
    )


async def test_chat_samples_at_the_configured_temperature(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["fine."]})
    await collect(make_orchestrator(tmp_path, model, FakeMemory(NOTES)).chatter, "", "hello")
    await collect(
        make_orchestrator(
            tmp_path / "warm", model, FakeMemory(NOTES), chat_temperature=0.9
        ).chatter,
        "",
        "hello",
    )
    assert [c.options.temperature for c in model.calls] == [0.3, 0.9]


async def test_a_message_naming_a_day_also_searches_the_notes_dated_then(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["The boiler [1]."]})
    memory = FakeMemory(NOTES)
    await collect(make_orchestrator(tmp_path, model, memory).chatter, "", "And on 10 March 2026?")
    assert [(s.since, s.until) for s in memory.searches] == [("", ""), ("2026-03-10", "2026-03-10")]
    assert "[1] Boiler (10 March 2026)" in model.calls[0].messages[-1].content


async def test_an_empty_memory_is_briefed_literally(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["I have nothing yet.\n@@CITATIONS@@\n[]"]})
    await collect(make_orchestrator(tmp_path, model, FakeMemory([])).chatter, "", "hello")
    assert "The memory is empty" in model.calls[0].messages[-1].content


async def test_sensitive_items_are_withheld_from_a_remote_model_with_the_note(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner({CHAT: ["ok.\n@@CITATIONS@@[]"]}, local=False)
    events = await collect(
        make_orchestrator(tmp_path, model, FakeMemory(NOTES)).chatter, "", "how am I?"
    )
    assert "panic" not in model.calls[0].messages[-1].content
    text = "".join(e.text for e in events if isinstance(e, Delta))
    assert text.endswith("_(1 sensitive source withheld from the cloud answer.)_")
    assert next(e for e in events if isinstance(e, Citations)).withheld == 1


async def test_a_chat_that_did_not_ask_for_sensitive_notes_withholds_them_from_a_local_model(
    tmp_path: Path,
) -> None:
    """Issue 11: the reply and its citations go to the caller, so sensitive notes are withheld
    unless the request asked for them, whatever the reasoner may see."""
    model = ScriptedReasoner({CHAT: ["You talked through it [3]. The deposit is £800 [1]."]})
    events = await collect(
        make_orchestrator(tmp_path, model, FakeMemory(NOTES)).chatter,
        "",
        "how am I?",
        include_sensitive=False,
    )
    prompt = " ".join(m.content for m in model.calls[0].messages)
    assert "panic" not in prompt and "Therapy" not in prompt
    text = "".join(e.text for e in events if isinstance(e, Delta))
    assert text.endswith("_(1 sensitive source withheld from this answer.)_")
    citations = next(e for e in events if isinstance(e, Citations))
    assert citations.withheld == 1
    assert all(c.episode_id != "ep-therapy" for c in citations.citations)


async def test_a_reply_that_drew_on_sensitive_notes_is_not_history_for_a_message_that_did_not(
    tmp_path: Path,
) -> None:
    """What a sensitive reply said must not reach the model by way of the conversation's history
    when a later message did not ask for sensitive notes."""
    model = ScriptedReasoner({CHAT: ["You talked through the panic attacks [3]."]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    first = await collect(o.chatter, "", "how am I?", include_sensitive=True)
    assert isinstance(first[0], Meta)
    conversation = first[0].conversation_id
    model.replies[CHAT] = ["Noted."]
    await collect(o.chatter, conversation, "and the deposit?", include_sensitive=False)
    later = " ".join(m.content for m in model.calls[1].messages)
    assert "panic" not in later and WITHHELD_REPLY in later
    await collect(o.chatter, conversation, "and me?", include_sensitive=True)
    owner = " ".join(m.content for m in model.calls[2].messages)
    assert "You talked through the panic attacks" in owner and WITHHELD_REPLY not in owner
    # Replayed, the sensitive reply is a placeholder unless the read asked for it.
    _, replay = await o.conversation("me", conversation)
    assert replay[1].withheld and replay[1].text == WITHHELD_READ and not replay[1].citations
    assert not replay[3].withheld and replay[3].text.startswith("Noted.")
    _, owner_replay = await o.conversation("me", conversation, include_sensitive=True)
    assert "panic attacks" in owner_replay[1].text and not owner_replay[1].withheld
    _, messages = o.store.get_conversation("me", conversation)
    assert [(m.role, m.sensitive) for m in messages][:4] == [
        ("user", False),
        ("assistant", True),  # it was shown the therapy note
        ("user", False),
        ("assistant", False),  # sensitive notes were withheld from it
    ]


async def test_a_failure_after_the_first_event_ends_the_stream_with_the_error(
    tmp_path: Path,
) -> None:
    def fail(_: object) -> None:
        raise Unavailable("retrieval is down")

    model = ScriptedReasoner({CHAT: ["never"]})
    chatter = make_orchestrator(tmp_path, model, FakeMemory(NOTES, on_search=fail)).chatter
    events: list[ChatEvent] = []
    with pytest.raises(Unavailable, match="retrieval is down"):
        async for event in chatter.chat("me", "", "hi", ""):
            events.append(event)
    assert [type(e) for e in events] == [Meta]


async def test_bad_requests_fail_before_the_stream(tmp_path: Path) -> None:
    chatter = make_orchestrator(tmp_path, ScriptedReasoner({}), FakeMemory(NOTES)).chatter
    with pytest.raises(InvalidArgument):
        await collect(chatter, "", "  ")
    with pytest.raises(NotFound):
        await collect(chatter, "no-such-conversation", "hi")
    with pytest.raises(NotFound, match="unknown persona"):
        await collect(chatter, "", "hi", persona="poet")


class RecordingMemory:
    """Passes every call to a FakeMemory and records which methods were called."""

    def __init__(self, inner: FakeMemory) -> None:
        self.inner = inner
        self.called: list[str] = []

    def __getattr__(self, name: str) -> object:
        method = getattr(self.inner, name)  # AttributeError first: a probe is not a call

        def recorded(*args: object, **kwargs: object) -> object:
            self.called.append(name)
            return method(*args, **kwargs)

        return recorded


async def test_replies_are_never_sent_to_memory(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: REPLY})
    memory = RecordingMemory(FakeMemory(NOTES))
    o = make_orchestrator(tmp_path, model, memory)  # type: ignore[arg-type]
    chatter = o.chatter
    first = await collect(chatter, "", "What about the deposit?")
    await collect(chatter, first[0].conversation_id, "And then?")  # type: ignore[union-attr]
    # Memory is only ever read, with the user's words: the assistant's reply never reaches it.
    assert memory.called == ["search", "search"]
    assert [s.query for s in memory.inner.searches] == ["What about the deposit?", "And then?"]


async def test_a_chat_cites_sources_by_number_and_streams_their_refs(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["It was £800 [", "1], and the boiler", " got fixed [2]."]})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    events = await collect(o.chatter, "", "What about the deposit and the boiler?")
    deltas = "".join(e.text for e in events if isinstance(e, Delta))
    assert deltas == "It was £800 [[Flat lease]], and the boiler got fixed [[Boiler]]."
    citations = next(e for e in events if isinstance(e, Citations)).citations
    assert [c.ref for c in citations] == ["[[Flat lease]]", "[[Boiler]]"]
    assert citations[1].quote == "The boiler was fixed after three visits."


async def test_a_looping_reply_is_cut_at_the_repeat(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: ["I am here for you today. ", "Tell me more about it. "] * 30})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    events = await collect(o.chatter, "", "hello")
    _, messages = o.store.get_conversation("me", events[0].conversation_id)  # type: ignore[union-attr]
    assert messages[1].text == "I am here for you today. Tell me more about it."
    assert [r["outcome"] for r in o.store.query("SELECT outcome FROM llm_log")] == ["stopped"]


async def test_chat_sizes_its_sources_to_what_the_model_reads_in_the_first_words_time(
    tmp_path: Path,
) -> None:
    long_notes = [
        dataclasses.replace(n, text=f"{n.text} " + "More of the same note. " * 12) for n in NOTES
    ]
    model = ScriptedReasoner({CHAT: ["ok."]})
    o = make_orchestrator(tmp_path, model, FakeMemory(long_notes), prefill_tokens_per_second=20.0)
    await collect(o.chatter, "", "the deposit?")  # 5 s at 20 tokens/s: 100 tokens
    prompt = model.calls[0].messages[-1].content
    assert "[1] " in prompt and "[4] " not in prompt  # a floor of short sources, never all

    fast = make_orchestrator(
        tmp_path / "fast", model, FakeMemory(long_notes), prefill_tokens_per_second=500.0
    )
    await collect(fast.chatter, "", "the deposit?")
    assert "[4] " in model.calls[1].messages[-1].content


async def test_a_reply_the_claim_check_cuts_whole_says_so_instead_of_nothing(
    tmp_path: Path,
) -> None:
    # The tiny model in CI wrote this, four times over, for a deposit the notes give as £800.
    model = ScriptedReasoner({CHAT: ["- The deposit Graham returned was £1,200.\n"] * 4})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    events = await collect(o.chatter, "", "How much of the deposit did Graham return?")

    said = "".join(e.text for e in events if isinstance(e, Delta))
    assert "£1,200" not in said
    assert said.startswith("I could not ground an answer to this in your notes, so I won't guess.")
    assert "[[Flat lease]]" in said
    [stored] = o.store.query("SELECT text FROM messages WHERE role = 'assistant'")
    assert stored["text"] == said


async def test_deleting_a_conversation_erases_its_model_calls_text(tmp_path: Path) -> None:
    model = ScriptedReasoner({CHAT: REPLY})
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    events = await collect(o.chatter, "", "What about the deposit we agreed with Dana?")
    kept = await collect(o.chatter, "", "And the deposit again, in another conversation?")
    [first, other] = [e.conversation_id for e in (events[0], kept[0]) if isinstance(e, Meta)]

    o.store.delete_conversation("me", first)

    rows = o.store.query("SELECT conversation_id, prompt, response FROM llm_log")
    erased = [r for r in rows if r["conversation_id"] == first]
    assert erased and all(
        (r["prompt"], r["response"]) == (FORGOTTEN_CONVERSATION, FORGOTTEN_CONVERSATION)
        for r in erased
    )  # the calls were made: their rows stay, their text goes
    [left] = [r for r in rows if r["conversation_id"] == other]
    assert "another conversation" in left["prompt"] and "Dana keeps" in left["response"]

"""AskStream (SPEC B8): the draft streams with source numbers already shown as refs, whatever the
model's chunking, then the checked result; a model that loops is stopped at its first repeat."""

from __future__ import annotations

from pathlib import Path

from memex.orchestrator.ask.events import AskResult, Draft, Started

from .fakes import NOTES, FakeMemory, make_orchestrator, reasoner


async def test_the_ask_streams_its_draft_then_the_checked_result(tmp_path: Path) -> None:
    model = reasoner(["The dep", "osit is £800 [", "1", "]. Dana", " is the landlord [4]."])
    events = [
        e
        async for e in make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert isinstance(events[0], Started)
    assert events[0].sources == ["[[Flat lease]]", "[[Boiler]]", "[[Therapy]]", "entities:dana"]
    drafts = [e.text for e in events if isinstance(e, Draft)]
    assert len(drafts) >= 3
    assert (
        "".join(drafts) == "The deposit is £800 [[Flat lease]]. Dana is the landlord entities:dana."
    )
    assert all("[1" not in d and "[4" not in d for d in drafts)  # no raw number ever shows
    assert isinstance(events[-1], AskResult) and not events[-1].abstained


async def test_a_space_streamed_alone_reaches_the_reader(tmp_path: Path) -> None:
    # Qwen's tokenizer writes the space before a digit as a token of its own.
    model = reasoner(["The deposit is", " ", "8", "0", "0", " pounds [1]."])
    events = [
        e
        async for e in make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    drafts = [e.text for e in events if isinstance(e, Draft)]
    assert "".join(drafts) == "The deposit is 800 pounds [[Flat lease]]."
    assert all(d.strip() for d in drafts)  # no event carries whitespace alone


async def test_a_model_that_loops_is_stopped_at_the_first_repeat(tmp_path: Path) -> None:
    loop = ["The deposit is £800 [1]. ", "Dana is the landlord [4]. "] * 20
    model = reasoner(loop)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "deposit?", include_sensitive=True)
    assert (
        result.answer == "The deposit is £800 [[Flat lease]]. Dana is the landlord entities:dana."
    )
    # Stopped on purpose, and audited so: not "cancelled", which says the reader went away.
    rows = o.store.query("SELECT outcome, response FROM llm_log WHERE purpose = 'ask_synthesize'")
    assert [r["outcome"] for r in rows] == ["stopped"]
    assert rows[0]["response"].count("The deposit is £800") == 2  # what the model wrote, kept

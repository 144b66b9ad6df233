"""Ask on a slow model (SPEC B1, B8): a streamed first pass over the best sources, which the whole
briefing then confirms or replaces (a Redraft), or widens to when the first pass does not stand;
a model fast enough for the whole briefing answers in one call."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memex.orchestrator.answer.briefing import today_line
from memex.orchestrator.ask.asker import Asker
from memex.orchestrator.ask.events import AskResult, Draft, Redraft, Started

from .fakes import (
    ANSWER,
    NOTES,
    FakeMemory,
    ScriptedReasoner,
    TwoAnswers,
    make_orchestrator,
    reasoner,
)

# A model this slow gets the first pass's floor (MIN_SOURCES_TOKENS, 300): two of these notes.
SLOW = 0.5
_WEATHER = " ".join(f"Line {n} is about the weather that week." for n in range(12))
LONG_NOTES = [replace(item, text=f"{item.text}\n\n{_WEATHER}") for item in NOTES]


def slow_asker(tmp_path: Path, model: ScriptedReasoner, **settings: object) -> Asker:
    """An asker whose model is so slow that its first pass reads two of the long notes."""
    return make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
        **settings,
    ).asker


async def test_a_slow_model_answers_from_its_best_sources_when_they_hold_the_answer(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    asker = slow_asker(tmp_path, model, ask_confirm_first_pass=False)
    events = [e async for e in asker.stream("me", "the deposit?", include_sensitive=True)]

    [call] = model.calls
    prompt = call.messages[-1].content
    assert "[1] Flat lease" in prompt and "[2] Boiler" in prompt and "[3]" not in prompt
    started, *drafts, finished = events
    assert isinstance(started, Started) and len(started.sources) == 4  # the whole briefing
    assert started.source_paths[0] == "home/Flat lease.md"  # a title need not be its file's
    # The first pass streams: its draft is the answer when it stands.
    texts = [d.text for d in drafts if isinstance(d, Draft)]
    assert len(texts) == len(drafts)
    assert "".join(texts) == "The deposit is £800 [[Flat lease]]."
    assert isinstance(finished, AskResult)
    result = finished
    assert not result.abstained and result.stages == ["retrieve", "synthesize", "ground_check"]
    assert [(c.ref, c.path) for c in result.citations] == [("[[Flat lease]]", "home/Flat lease.md")]


async def test_a_first_pass_that_stands_is_kept_when_the_whole_briefing_confirms_it(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    first, whole = (c.messages[-1].content for c in model.calls)
    assert "[3]" not in first
    # The whole briefing starts as the first prompt did, so the model reads only what was added.
    assert whole.startswith(first.split(f"\n\n{today_line()}")[0] + "\n\n[3] Therapy")
    assert not [e for e in events if isinstance(e, Redraft)]  # the reader keeps the draft
    drafts = "".join(e.text for e in events if isinstance(e, Draft))
    assert drafts == "The deposit is £800 [[Flat lease]]."
    finished = events[-1]
    assert isinstance(finished, AskResult)
    assert finished.answer == drafts and not finished.abstained
    assert finished.stages == ["retrieve", "synthesize", "ground_check", "confirm"]


async def test_a_first_pass_is_kept_over_an_answer_that_rests_on_its_sources_less_well(
    tmp_path: Path,
) -> None:
    # "1 May": the 1 is only the note's date, so the whole briefing's answer is a paraphrase
    # where the draft was the note's words.
    later = ["The deposit is £800, returned on 1 May [1]."]
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=later)
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2 and not [e for e in events if isinstance(e, Redraft)]
    finished = events[-1]
    assert isinstance(finished, AskResult)
    assert finished.answer == "The deposit is £800 [[Flat lease]]."
    assert finished.stages[-1] == "confirm"


async def test_the_whole_briefings_answer_that_adds_what_the_same_note_writes_replaces_it(
    tmp_path: Path,
) -> None:
    later = ["The deposit is £800, as agreed with Dana [1]."]
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=later)
    asker = slow_asker(tmp_path, model, ask_confirm_first_pass=True)
    events = [e async for e in asker.stream("me", "the deposit?", include_sensitive=True)]
    finished = events[-1]
    assert isinstance(finished, AskResult)
    assert finished.answer == "The deposit is £800, as agreed with Dana [[Flat lease]]."
    assert "replace" in finished.stages


@pytest.mark.parametrize(
    ("question", "draft", "whole"),
    [
        # The same figure, and a neighbour's aside cited beside the draft's note.
        (
            "the deposit?",
            "The deposit is £800 [1].",
            "The deposit is £800 [1]. The boiler was fixed [2].",
        ),
        # A part of the question the draft answers, left out.
        (
            "How much is the deposit, and when is it returned?",
            "The deposit is £800 [1], and it is returned in May [1].",
            "The deposit is £800 [1]. The boiler was fixed after three visits [2].",
        ),
    ],
)
async def test_a_whole_briefing_answer_that_adds_only_neighbours_or_answers_less_leaves_the_draft(
    tmp_path: Path, question: str, draft: str, whole: str
) -> None:
    model = TwoAnswers({ANSWER: [draft]}, later=[whole])
    asker = slow_asker(tmp_path, model, ask_confirm_first_pass=True, plan_hop="never")
    events = [e async for e in asker.stream("me", question, include_sensitive=True)]
    assert [e for e in events if isinstance(e, Redraft)] == []
    assert len(model.calls) == 2
    finished = events[-1]
    assert isinstance(finished, AskResult)
    assert [c.ref for c in finished.citations] == ["[[Flat lease]]"]
    assert finished.stages[-1] == "confirm"


@pytest.mark.parametrize(
    ("whole", "answer", "abstained"),
    [
        # Another note, as well supported ("returned in May" alone would be the same answer).
        ("The deposit is £800 [1]. Dana Ruiz is the landlord [4].", "The deposit is £800", False),
        ("I don't know.", "I could not ground an answer", True),
    ],
)
async def test_a_first_pass_that_the_whole_briefing_answers_otherwise_is_replaced(
    tmp_path: Path, whole: str, answer: str, abstained: bool
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=[whole])
    events = [
        e
        async for e in slow_asker(tmp_path, model, ask_confirm_first_pass=True).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2
    redraft = next(i for i, e in enumerate(events) if isinstance(e, Redraft))
    assert events[redraft] == Redraft("all 4 sources answered otherwise")
    before = "".join(e.text for e in events[:redraft] if isinstance(e, Draft))
    assert before == "The deposit is £800 [[Flat lease]]."
    finished = events[-1]
    assert isinstance(finished, AskResult)
    result = finished
    assert result.answer.startswith(answer) and result.abstained is abstained
    assert result.stages[-2:] == ["confirm", "replace"]
    # An answer that abstains is not shown as a draft; the result says it.
    after = "".join(e.text for e in events[redraft:] if isinstance(e, Draft))
    assert after == ("" if abstained else result.answer)


async def test_a_whole_briefing_answer_broken_without_declining_leaves_the_draft(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["The landlord may keep it."])
    events = [
        e
        async for e in slow_asker(tmp_path, model).stream(
            "me", "the deposit?", include_sensitive=True
        )
    ]
    assert len(model.calls) == 2 and not [e for e in events if isinstance(e, Redraft)]
    finished = events[-1]
    assert isinstance(finished, AskResult)
    assert finished.answer == "The deposit is £800 [[Flat lease]]."
    assert not finished.abstained and finished.stages[-1] == "confirm"


async def test_a_first_pass_that_showed_nothing_widens_without_a_redraft(tmp_path: Path) -> None:
    model = TwoAnswers({ANSWER: [""]}, later=["Fixed after three visits [2]."])
    asker = make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
    ).asker
    events = [e async for e in asker.stream("me", "the boiler?", include_sensitive=True)]
    assert len(model.calls) == 2  # it widened
    assert not [e for e in events if isinstance(e, Redraft)]  # no draft to set aside
    assert "".join(e.text for e in events if isinstance(e, Draft)) == (
        "Fixed after three visits [[Boiler]]."
    )


async def test_a_first_answer_that_does_not_rest_on_its_sources_widens_to_the_whole_briefing(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["I don't know."]}, later=["Fixed after three visits [2]."])
    asker = make_orchestrator(
        tmp_path,
        model,
        FakeMemory(LONG_NOTES),
        prefill_tokens_per_second=SLOW,
        ask_first_pass_min_tokens=420,  # the first pass reads two of these long notes
    ).asker
    events = [e async for e in asker.stream("me", "the boiler?", include_sensitive=True)]

    first, widened = (c.messages[-1].content for c in model.calls)
    # The widened prompt starts as the first did, so the model reads only what was added.
    assert widened.startswith(first.split(f"\n\n{today_line()}")[0] + "\n\n[3] Therapy")
    # The first draft streams, is set aside (Redraft), and the widened answer follows it.
    redraft = next(i for i, e in enumerate(events) if isinstance(e, Redraft))
    assert events[redraft] == Redraft("reading all 4 sources")
    before = [e.text for e in events[:redraft] if isinstance(e, Draft)]
    after = [e.text for e in events[redraft:] if isinstance(e, Draft)]
    assert "".join(before) == "I don't know."
    assert "".join(after) == "Fixed after three visits [[Boiler]]."
    assert sum(isinstance(e, Redraft) for e in events) == 1
    finished = events[-1]
    assert isinstance(finished, AskResult)
    result = finished
    assert not result.abstained
    assert result.stages == [
        "retrieve",
        "synthesize",
        "ground_check",
        "widen",
        "synthesize",
        "ground_check",
    ]
    assert [c.ref for c in result.citations] == ["[[Boiler]]"]


async def test_a_model_fast_enough_for_the_whole_briefing_answers_in_one_call(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £800 [1]."])
    asker = make_orchestrator(
        tmp_path, model, FakeMemory(LONG_NOTES), prefill_tokens_per_second=1000.0
    ).asker
    result = await asker.ask("me", "the deposit?", include_sensitive=True)
    [call] = model.calls
    assert "[4] Record: Dana Ruiz" in call.messages[-1].content
    assert result.stages == ["retrieve", "synthesize", "ground_check"]

"""Ask on a compound question (SPEC B1): a part the answer left out is asked for again in one
short call, and a part the notes do not answer is named, never filled in."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.orchestrator.answer.briefing import CITE_REMINDER
from memex.orchestrator.ask.events import AskResult, Draft

from .fakes import ANSWER, NOTES, FakeMemory, TwoAnswers, make_orchestrator

COMPOUND = "How much is the deposit, and when is it returned?"


async def test_a_part_of_a_compound_question_the_answer_left_out_is_asked_for_again(
    tmp_path: Path,
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["It is returned in May [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    events = [e async for e in o.asker.stream("me", COMPOUND, include_sensitive=True)]
    first, part = ("\n".join(m.content for m in c.messages) for c in model.calls)
    # The part's prompt starts as the answer's did, question and all: the model reads the rest.
    assert part.startswith(first.removesuffix(CITE_REMINDER))
    assert "Still to answer: When is it returned?" in part
    finished = events[-1]
    assert isinstance(finished, AskResult)
    result = finished
    expected = "The deposit is £800 [[Flat lease]]. It is returned in May [[Flat lease]]."
    assert result.answer == expected and not result.abstained
    assert "".join(e.text for e in events if isinstance(e, Draft)) == expected
    assert result.stages[-1] == "answer_parts"


async def test_a_part_answered_with_a_link_to_no_shown_note_is_kept_by_its_attributed_source(
    tmp_path: Path,
) -> None:
    """The part's reply cites an invented note; its sentence is held by the source it is
    attributed to, and that, not the invented link, is what the whole answer is read with."""
    model = TwoAnswers(
        {ANSWER: ["The deposit is £800 [1] [9]."]},
        later=["It is returned in May. [[deposit-return-date]]"],
    )
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert (
        result.answer == "The deposit is £800 [[Flat lease]]. It is returned in May. [[Flat lease]]"
    )
    assert not result.abstained and result.stages[-1] == "answer_parts"


async def test_a_why_left_out_is_asked_as_a_question_of_its_own(tmp_path: Path) -> None:
    """Shown the answer so far and "Still to answer: Why?", a small model writes the answer
    again: the why is asked of the first part's clause, over the same sources."""
    model = TwoAnswers(
        {ANSWER: ["The deposit is £800 [1]."]}, later=["Because Dana holds it for the flat [1]."]
    )
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask(
        "me", "How much is the deposit Dana holds, and why?", include_sensitive=True
    )
    first, part = ("\n".join(m.content for m in c.messages) for c in model.calls)
    assert (
        "Question: For what reason is the deposit Dana holds?" in part
        and "Still to answer" not in part
    )
    assert part.startswith(first.split("Question:")[0])  # the sources, as the answer's call
    assert result.answer == (
        "The deposit is £800 [[Flat lease]]. Because Dana holds it for the flat [[Flat lease]]."
    )


@pytest.mark.parametrize(
    "later",
    [
        "The notes do not say when it is returned.",  # declined
        "It comes back on 3 June [1].",  # a date no source holds: the claim check cuts it
    ],
)
async def test_a_part_the_notes_do_not_answer_is_named_never_filled_in(
    tmp_path: Path, later: str
) -> None:
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=[later])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 2 and not result.abstained
    assert result.answer == (
        "The deposit is £800 [[Flat lease]].\n\n"
        "Your notes don't answer this part: When is it returned?"
    )


async def test_an_answer_to_every_part_needs_no_further_call(tmp_path: Path) -> None:
    reply = ["The deposit is £800 [1], and it is returned in May [1]."]
    model = TwoAnswers({ANSWER: reply}, later=["Never asked."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 1 and "answer_parts" not in result.stages


async def test_a_part_call_that_only_repeats_the_answer_names_nothing(tmp_path: Path) -> None:
    """The first sentence may have answered the part in words the part does not share; a model
    that says it again has not said the notes lack it."""
    model = TwoAnswers({ANSWER: ["The deposit is £800 [1]."]}, later=["The deposit is £800 [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", COMPOUND, include_sensitive=True)
    assert len(model.calls) == 2 and result.answer == "The deposit is £800 [[Flat lease]]."


async def test_a_declined_part_that_the_answer_shares_words_with_is_not_named(
    tmp_path: Path,
) -> None:
    """A small model declines a part it has just answered in other words: the part that a
    sentence of the answer touches is not said to be missing from the notes."""
    question = "How much is the flat deposit, and when does Dana return it?"
    reply = ["The flat deposit Dana holds is £800 [1]."]  # the first part's, by more words
    model = TwoAnswers({ANSWER: reply}, later=["The notes do not say."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES), plan_hop="never")
    result = await o.asker.ask("me", question, include_sensitive=True)
    assert len(model.calls) == 2
    assert result.answer == "The flat deposit Dana holds is £800 [[Flat lease]]."

"""Ask's abstentions (SPEC B1, B10): an answer that does not rest on the sources shown (uncited,
unsupported, off topic, of another kind, borrowing a figure, restating the question, declining)
gives way to an answer that says so and names the closest notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.orchestrator.memory.items import ShownItem

from .fakes import NOTES, FakeMemory, make_orchestrator, reasoner


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (["It was £5000 [7]."], "unsupported"),  # names no source shown; none has £5000
        (["It was sunny [7]."], "uncited"),  # names no source shown
        (["It was £800 [1] [7] [8]."], "ungrounded"),  # most numbers name nothing shown
        (["I don't know."], "declined"),
        (["The notes do not mention the deposit [1]."], "declined"),
        (["Your cat is called Pixel and likes tuna [2]."], "unsupported"),
        # Every word is in [1]; the amount is in no source (a model's mix of two notes).
        (["The deposit of £950 was returned in May [1]."], "unsupported"),
        # An amount no source holds, beside a sentence that one supports word for word.
        (["It cost £5 a visit. The boiler was fixed after three visits [2]."], "unsupported"),
        (["It was probably sunny."], "uncited"),
    ],
)
async def test_answers_that_do_not_rest_on_a_source_abstain_and_say_so(
    tmp_path: Path, reply: list[str], reason: str
) -> None:
    model = reasoner(reply)
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "the deposit?", include_sensitive=True)
    assert result.abstained and result.citations == [] and result.abstain_reason == reason
    assert result.answer.startswith("I could not ground an answer to this in your notes")
    assert "The closest notes were [[Flat lease]], [[Boiler]], [[Therapy]]." in result.answer
    assert result.opinion == ""  # a right answer never hides in opinion
    [row] = o.store.query("SELECT abstained FROM telemetry_turns")
    assert row["abstained"] == 1


async def test_an_answer_resting_on_sources_about_something_else_abstains(tmp_path: Path) -> None:
    model = reasoner(["You drive a car that cost £800 [1]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What car do I drive?"
    )
    assert result.abstained and result.abstain_reason == "off_topic"


async def test_an_answer_that_borrows_a_figure_from_another_note_abstains(tmp_path: Path) -> None:
    # Told in the boiler note's words; the £800 is the deposit's, in another note.
    model = reasoner(["The boiler was fixed after the visits for £800 [2]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What did the boiler repair cost?"
    )
    assert result.abstained and result.abstain_reason == "unsupported"


async def test_an_answer_of_another_kind_than_the_one_asked_for_abstains(tmp_path: Path) -> None:
    # Asked for a plugin, it gives what the boiler note holds; every word of it is there.
    model = reasoner(["The boiler was fixed after three visits [2]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "Which plugin fixed the boiler?"
    )
    assert result.abstained and result.abstain_reason == "wrong_kind"


async def test_an_answer_that_restates_the_question_abstains(tmp_path: Path) -> None:
    model = reasoner(["The deposit was agreed [1]."])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask(
        "me", "What was agreed about the deposit?"
    )
    assert result.abstained and result.abstain_reason == "uninformative"


async def test_an_ask_whose_main_claim_is_unsupported_abstains_naming_the_closest_notes(
    tmp_path: Path,
) -> None:
    model = reasoner(["The deposit is £950 [1]. It is returned in May [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "How big is the deposit?", include_sensitive=True)
    assert result.abstained and result.abstain_reason == "unsupported"
    assert "[[Flat lease]]" in result.answer and "£950" not in result.answer


FRIENDS = [
    ShownItem(
        item_id="n1",
        episode_id="ep-dinner",
        ref="[[2026-03-02]]",
        title="2026-03-02",
        text="Marta + Jonas over for dinner, made the lentil soup.",
    ),
    ShownItem(
        item_id="n2",
        episode_id="ep-ines",
        ref="[[Ines Carvalho]]",
        title="Ines Carvalho",
        kind="chunk",
        attributes={"aliases": ["Nessa"]},
        text="Met at the climbing gym. Partner: Jonas.",
    ),
    ShownItem(
        item_id="n3",
        episode_id="ep-team",
        ref="[[Team]]",
        title="Team",
        text="Jonas Berg joined the team in May.",
    ),
]


@pytest.mark.parametrize(
    ("question", "reply", "abstains"),
    [
        # The neighbour's first name, read as a surname: no note writes "Jonas Marta".
        ("What's Jonas's last name?", ["Jonas's last name is Marta [1]."], True),
        ("What is the surname of Jonas?", ["It is Marta [1]."], True),
        # Written after the first name in a note it cites.
        ("What's Jonas's last name?", ["Jonas's last name is Berg [3]."], False),
        # The last word of the title of the note the person is also called by.
        ("What's Nessa's surname?", ["Nessa's surname is Carvalho [2]."], False),
    ],
)
async def test_a_surname_is_given_only_where_a_note_writes_it(
    tmp_path: Path, question: str, reply: list[str], abstains: bool
) -> None:
    o = make_orchestrator(tmp_path, reasoner(reply), FakeMemory(FRIENDS))
    result = await o.asker.ask("me", question)
    assert result.abstained is abstains
    if abstains:
        assert result.abstain_reason == "unsupported"

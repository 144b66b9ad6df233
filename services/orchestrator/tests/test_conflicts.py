"""Contradictions (issue 37): an answer resting on one note's value says when another note in
the briefing gives a different value for the same thing, and cites both, newest first."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.orchestrator.answer import conflicts
from memex.orchestrator.answer.lexical import segments
from memex.orchestrator.answer.reading import read
from memex.orchestrator.answer.sources import Source
from memex.orchestrator.conversation.chat import Citations, Delta
from memex.orchestrator.memory.items import ShownItem

from .fakes import FakeMemory, ScriptedReasoner, make_orchestrator

QUESTION = "How much of the deposit did Graham agree to give back?"
OLD = "Graham agreed to give back £1,030 of the deposit."
NEW = "Graham emailed: he will now give back only £900 of the deposit."
BRIEFED = [
    ShownItem("c1", OLD, "[[Deposit call]]", "ep-call", "Deposit call", "2026-03-01"),
    ShownItem("c2", NEW, "[[Graham email]]", "ep-email", "Graham email", "2026-04-10"),
]
DIFFER = (
    "Your notes differ on this: [[Graham email]] (10 April 2026) gives £900, "
    "[[Deposit call]] (1 March 2026) gives £1,030."
)


def note(number: int, text: str, title: str, date: str, path: str = "") -> Source:
    item = ShownItem(
        item_id=f"c{number}",
        episode_id=f"ep-{title}",
        ref=f"[[{title}]]",
        title=title,
        date=date,
        path=path or f"{title}.md",
        text=text,
    )
    return Source(number, item, text, tuple(segments(text)))


def differ(answer: str, *sources: Source, question: str = QUESTION) -> list[conflicts.Disagreement]:
    return conflicts.find(read(answer, sources, question), sources, question)


@pytest.mark.parametrize(
    ("text", "kind", "unit", "amount"),
    [
        ("paid £1,030.00", "money", "£", "1030"),
        ("about $4.2k", "money", "$", "4200"),
        ("a 40 % rise", "percent", "%", "40"),
        ("took 3 weeks", "measure", "day", "21"),
        ("in 2 minutes 40 seconds", "measure", "second", "160"),
        ("in 2 minutes 40.", "measure", "second", "160"),
        ("for 1 hour 5", "measure", "second", "3900"),
        ("1 hour, 20 minutes and 5 secs", "measure", "second", "4805"),
        ("12.5 kg of flour", "measure", "kg", "12.5"),
        ("at 2:30 pm", "time", "", "14:30"),
        ("on 14 March 2026", "date", "", "14 mar 2026"),
        ("from March 14th", "date", "", "14 mar"),
    ],
)
def test_a_figure_is_read_with_its_kind(text: str, kind: str, unit: str, amount: str) -> None:
    [value] = conflicts.values(text)
    assert (value.kind, value.unit, value.amount) == (kind, unit, amount)


def test_a_duration_in_parts_is_not_contradicted_by_one_of_them() -> None:
    # The demo vault's year review against its project note (a real answer of `memex eval`).
    review = note(
        1,
        "Stuck orders are found in 38 seconds instead of 2 minutes 40.",
        "Looking back",
        "2026-11-22",
    )
    warden = note(
        2,
        "Average time to find a stuck order in our baseline test was 2 minutes 40 seconds.",
        "Warden",
        "2025-01-20",
    )
    answer = (
        "Supervisors can find a stuck order in 38 seconds now, compared with 2 minutes 40 "
        "seconds before the redesign [1]."
    )
    assert not differ(answer, review, warden, question="How fast are stuck orders found now?")


def test_bare_numbers_have_no_kind() -> None:
    assert conflicts.values("Planted 3 rows of 12 leeks in 2025.") == []


def test_another_notes_different_value_for_the_same_thing_is_said_newest_first() -> None:
    old = note(1, OLD, "Deposit call", "2026-03-01")
    new = note(2, NEW, "Graham email", "2026-04-10")
    reading = read("Graham agreed to give back £1,030 of the deposit [1].", [old, new], QUESTION)
    found = conflicts.find(reading, [old, new], QUESTION)

    assert [(d.used, d.other) for d in found] == [(old, new)]
    assert conflicts.said(found) == f"\n\n{DIFFER}"
    cited = conflicts.citations(found, reading.citations)
    assert [c.ref for c in cited] == ["[[Deposit call]]", "[[Graham email]]"]
    assert cited[1].quote == NEW and cited[1].support == "verbatim"


@pytest.mark.parametrize(
    "other",
    [
        "Graham confirmed he will give back £1,030 of the deposit.",  # the same value
        "The allotment deposit was £50.",  # another thing: one word in common
        "Graham agreed to give back most of the deposit.",  # no figure of the kind
        "Graham agreed the deposit check took 3 days.",  # a figure of another kind
    ],
)
def test_no_disagreement_where_the_other_note_agrees_or_speaks_of_something_else(
    other: str,
) -> None:
    assert not differ(
        "Graham agreed to give back £1,030 of the deposit [1].",
        note(1, OLD, "Deposit call", "2026-03-01"),
        note(2, other, "Other", "2026-04-10"),
    )


def test_a_value_the_used_note_also_writes_is_no_disagreement() -> None:
    used = note(1, "Graham agreed to give back £1,030 of the £1,200 deposit.", "Call", "2026-03-01")
    other = note(2, "Graham holds the £1,200 deposit until the inspection.", "Lease", "2026-01-05")
    assert not differ("Graham agreed to give back £1,030 of the deposit [1].", used, other)


def test_two_excerpts_of_one_note_never_disagree() -> None:
    first = note(1, OLD, "Deposit", "2026-03-01", path="home/Deposit.md")
    second = note(2, NEW, "Deposit", "2026-03-01", path="home/Deposit.md")
    assert not differ("Graham agreed to give back £1,030 of the deposit [1].", first, second)


def test_a_different_date_for_the_same_appointment() -> None:
    old = note(1, "Dentist check-up booked for 14 March at Smile Clinic.", "Dentist", "2026-02-01")
    new = note(
        2, "Smile Clinic moved my dentist check-up to 21 March.", "Clinic call", "2026-03-02"
    )
    found = differ(
        "Your dentist check-up is on 14 March [1].",
        old,
        new,
        question="When is my dentist check-up?",
    )
    assert conflicts.said(found) == (
        "\n\nYour notes differ on this: [[Clinic call]] (2 March 2026) gives 21 March, "
        "[[Dentist]] (1 February 2026) gives 14 March."
    )


async def test_an_ask_resting_on_one_note_says_the_other_differs_and_cites_both(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner(
        {"How to answer:": ["Graham agreed to give back £1,030 of the deposit [1]."]}
    )
    o = make_orchestrator(tmp_path, model, FakeMemory(BRIEFED))
    result = await o.asker.ask("me", QUESTION)

    assert not result.abstained
    assert result.answer.endswith(DIFFER)
    assert [c.ref for c in result.citations] == ["[[Deposit call]]", "[[Graham email]]"]


async def test_a_chat_reply_resting_on_one_note_streams_the_difference_and_cites_both(
    tmp_path: Path,
) -> None:
    model = ScriptedReasoner(
        {"How to reply:": ["Graham agreed to give back £1,030 of the deposit [1]."]}
    )
    o = make_orchestrator(tmp_path, model, FakeMemory(BRIEFED))
    events = [e async for e in o.chatter.chat("me", "", QUESTION, "", include_sensitive=True)]

    said = "".join(e.text for e in events if isinstance(e, Delta))
    assert said.endswith(DIFFER)
    [cited] = [e for e in events if isinstance(e, Citations)]
    assert [c.ref for c in cited.citations] == ["[[Deposit call]]", "[[Graham email]]"]
    [stored] = o.store.query("SELECT text FROM messages WHERE role = 'assistant'")
    assert stored["text"].endswith("[[Deposit call]] (1 March 2026) gives £1,030.")

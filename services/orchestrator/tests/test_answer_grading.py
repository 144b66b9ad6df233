"""Grading a claim against its sources (issue 10; ``answer/grading.py``): the quote and the support
label (verbatim, paraphrase, inference), a figure held only another way or not at all, money that
is only a measure, and a figure borrowed from another note."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.grading import grade
from memex.orchestrator.answer.reading import read

from .fakes import SOURCES, source


def test_a_numbered_answer_is_grounded_quoted_and_graded() -> None:
    reading = read("The rent is £48 a year [1]. He is the secretary [2]. Jam [9].", SOURCES)
    assert [(c.ref, c.support) for c in reading.citations] == [
        ("[[Tenancy]]", "verbatim"),
        ("[[Ron]]", "verbatim"),
    ]
    assert reading.citations[0].quote == "Rent: **£48 per year**, due 1 January."
    assert reading.citations[1].quote == "He is the secretary."
    assert reading.report.dropped == ("[9]",)
    assert (reading.report.cited, reading.report.grounded) == (3, 2)
    assert not reading.declined and not reading.attributed


def test_support_is_graded_from_how_much_of_the_claim_the_sentence_holds() -> None:
    assert grade("He is the secretary.", SOURCES[1]).support == "verbatim"
    assert grade("Ron, the secretary, has a notebook.", SOURCES[1]).support == "paraphrase"
    assert grade("Ron grows prize-winning leeks in Harrogate.", SOURCES[1]).support == "inference"
    # A wrong figure is not supported by the sentence with the right one.
    assert grade("The rent is £55 per year.", SOURCES[0]).support != "verbatim"


def test_a_figure_the_source_does_not_hold_leaves_the_claim_an_inference() -> None:
    race = source(1, "Ran the Kirkstall half marathon in the rain.", "Kirkstall")
    assert grade("I ran the Kirkstall half marathon in 2:04:37.", race).support == "inference"
    assert grade("I ran the Kirkstall half marathon.", race).support == "verbatim"


def test_money_the_source_writes_only_as_a_measure_leaves_the_claim_an_inference() -> None:
    car = source(1, "Front brake pads at 4 mm, so replace them by spring. Paid $142.38.", "Tires")
    assert grade("The brake pads cost $4.", car).support == "inference"
    assert grade("The front brake pads are at 4 mm.", car).support == "verbatim"
    assert grade("I paid $142.38 for the tires.", car).support != "inference"


@pytest.mark.parametrize(
    ("claim", "text"),
    [
        ("I finished it on 3 February 2026.", "author: Kazuo Ishiguro\nfinished: 2026-02-03"),
        ("The boiler took 3 visits to fix.", "The boiler was fixed after three visits."),
        ("The boiler took three visits to fix.", "The boiler was fixed after 3 visits."),
    ],
)
def test_a_figure_written_another_way_is_still_held(claim: str, text: str) -> None:
    assert grade(claim, source(1, text, "Note")).support != "inference"


def test_money_an_answer_gives_must_be_money_in_what_it_was_shown() -> None:
    car = source(1, "Front brake pads at 4 mm, so replace them by spring.", "Tires")
    deposit = source(2, "Graham returns £800 of the deposit.", "Deposit")
    carpet = source(3, "The carpet cleaning cost £120.", "Carpet")
    shown = [car, deposit, carpet]
    assert read("The brake pads cost $4 [1].", shown).unfounded_money  # a measure
    assert read("The front brake pads cost $4.", shown).unfounded_money  # attributed to [1]
    # nowhere: the claim check cuts it before money is weighed
    assert read("Graham returns £950 of the deposit [2].", shown).main_unsupported
    # Two sources under one number: the amount is in another source shown, so it stands.
    assert not read("Graham returns £800, less £120 for the carpet [2].", shown).unfounded_money


def test_a_figure_from_another_note_in_one_notes_words_is_borrowed() -> None:
    trip = source(
        1, "Booked a whale-watching boat; they cancelled. Refund came later.", "Road trip"
    )
    tax = source(2, "Tax refund of $1,184.62. Plan: $1,000 into the TFSA.", "Tax return")
    shown = [trip, tax]
    claim = "The refund for the cancelled whale-watching trip was $1,000"
    assert read(f"{claim}.", shown).borrowed_figure
    assert read(f"{claim} [1].", shown).main_unsupported  # [1] does not hold $1,000: cut
    assert not read("$1,000 of the tax refund went into the TFSA [2].", shown).borrowed_figure
    assert not read("They cancelled the whale-watching boat [1].", shown).borrowed_figure


def test_a_claim_told_from_one_note_may_add_a_figure_from_another() -> None:
    deposit = source(1, "Graham returns £800 of the deposit.", "Deposit")
    carpet = source(2, "The carpet cleaning cost £120.", "Carpet")
    reading = read("Graham returns £800, less £120 for the carpet [1][2].", [deposit, carpet])
    assert not reading.borrowed_figure


def test_a_note_shown_in_several_chunks_holds_the_figures_of_all_of_them() -> None:
    terms = source(1, "Deposit paid: £1,150, protected with the TDS.", "Deposit", episode_id="d")
    back = source(2, "Amount to come back to me: £1,030.", "Deposit", episode_id="d")
    claim = "Graham gives back £1,030 of the £1,150 deposit protected with the TDS."
    assert not read(claim, [terms, back]).borrowed_figure

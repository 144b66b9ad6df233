"""Where an answer's claims point (issue 10; ``answer/claims.py``, ``answer/check.py``): an uncited
claim attributed to the source that holds it, a fact moved to the source that holds it, sources
named beside the one that holds a claim left uncited, and a claim no shown source holds cut."""

from __future__ import annotations

from memex.orchestrator.answer.reading import read

from .fakes import SOURCES, source


def test_an_uncited_answer_is_attributed_only_to_a_source_that_holds_it() -> None:
    reading = read("Ron keeps the waiting list in a red notebook.", SOURCES)
    assert reading.attributed and [c.ref for c in reading.citations] == ["[[Ron]]"]
    assert not read("Ron lives in Leeds and likes jazz.", SOURCES).citations


def test_an_uncited_answer_that_names_a_note_is_attributed_to_it() -> None:
    # Both hold the claim; the person note holds more of its words, but the claim names the
    # agreement, as a model that writes no numbers cites.
    sources = [
        source(
            1,
            "Short version: £1,150 deposit, £120 deducted, £1,030 back to me. Graham "
            "wrote it up in Flat Deposit Agreement.",
            "Graham Pearce",
        ),
        source(
            2,
            "- Deposit paid: £1,150.\n- Amount to come back to me: £1,030.",
            "Flat Deposit Agreement",
        ),
    ]
    claim = "Graham agreed to give back £1,030 of the £1,150 deposit, as agreed in the Flat Deposit"
    reading = read(f"{claim} Agreement.", sources)
    assert reading.attributed
    assert [c.ref for c in reading.citations] == ["[[Flat Deposit Agreement]]"]
    unnamed = read("Graham agreed to give back £1,030 of the £1,150 deposit.", sources)
    assert [c.ref for c in unnamed.citations] == ["[[Graham Pearce]]"]


def test_a_fact_cited_to_the_wrong_source_is_moved_to_the_one_that_holds_it() -> None:
    reading = read("The rent is £48 per year [2]. Ron is the secretary [2].", SOURCES)
    assert reading.reanchored == 1
    assert [c.ref for c in reading.citations] == ["[[Tenancy]]", "[[Ron]]"]
    assert reading.citations[0].support == "verbatim"
    assert reading.answer == "The rent is £48 per year [[Tenancy]]. Ron is the secretary [[Ron]]."
    assert (reading.report.cited, reading.report.grounded) == (2, 2)


def test_a_shared_closing_number_keeps_naming_what_the_other_sentence_rests_on() -> None:
    reading = read("Ron is the secretary. Rent is £48 per year. [2]", SOURCES)
    assert reading.reanchored == 1
    assert reading.answer == "Ron is the secretary. Rent is £48 per year. [[Ron]] [[Tenancy]]"


def test_a_claim_whose_figure_only_another_source_holds_moves_to_that_source() -> None:
    sources = [
        source(1, "Chip time 2:04:37. Goal was sub-2:10.", "Kirkstall Half Marathon"),
        source(2, "Harewood was a tune-up for the Kirkstall half marathon.", "Harewood"),
    ]
    reading = read("I ran the Kirkstall half marathon in 2:04:37 [2].", sources)
    assert reading.reanchored == 1
    assert [c.ref for c in reading.citations] == ["[[Kirkstall Half Marathon]]"]


def test_a_claim_is_not_moved_to_a_source_that_holds_only_its_figure() -> None:
    tires = source(1, "Free inspection: front brake pads at 4 mm. Replace in the spring.", "Tires")
    pottery = source(2, "Pottery: threw 4 mugs, kept 2.", "Log")
    reading = read("$4 mm. Replace in the spring. [1]", [tires, pottery])
    assert reading.reanchored == 0 and reading.unfounded_money


def test_a_claim_moves_to_the_source_that_holds_what_it_gives_to_type() -> None:
    sources = [
        source(1, "Out of inodes, no new files can be made. Check with `df -i`.", "Inodes"),
        source(2, "Check how full each disk is with `df -h`, in sizes people read.", "Disk space"),
    ]
    question = "The disk was full with space left. What ran out, and how do I check?"
    # The closing [2] names the note that holds the plain words, not the command; the first
    # sentence restates the question and keeps nothing cited.
    text = (
        "The disk was full with space left. It ran out of inodes. "
        "You check how full it is with `df -i`. [2]"
    )
    reading = read(text, sources, question)
    assert [c.ref for c in reading.citations] == ["[[Inodes]]"]
    assert reading.answer.endswith("with `df -i`. [[Inodes]]")


def test_a_sentence_that_restates_the_question_keeps_the_number_it_shares() -> None:
    sources = [
        source(1, "The AGM voted on the rent. I still need to write up the voting.", "AGM"),
        source(2, "- (to do) Register to vote at the new address.", "Checklist"),
    ]
    question = "Is there something I still need to do about voting?"
    text = (
        "Yes, there is something I still need to do about voting. "
        "I need to register to vote at the new address. [2]"
    )
    assert read(text, sources).reanchored == 1  # read without its question: moved to [1]
    reading = read(text, sources, question)
    assert reading.reanchored == 0
    # The words it repeats from the question are not weighed: the rest is the checklist's.
    assert [(c.ref, c.support) for c in reading.citations] == [("[[Checklist]]", "verbatim")]
    assert reading.answer.endswith("at the new address. [[Checklist]]")


def test_a_source_named_only_beside_the_one_that_holds_the_claim_is_not_cited() -> None:
    sources = [
        source(1, "Check free space with `df -h` to see how full each disk is.", "Disk space"),
        source(2, "Out of inodes, no new files can be made. Check with `df -i`.", "Inodes"),
    ]
    question = "The disk said it was full but had space left. What ran out?"
    text = "It ran out of inodes, so no new files can be made. Check with `df -i`. [1][2]"
    reading = read(text, sources, question)
    assert [c.ref for c in reading.citations] == ["[[Inodes]]"]
    assert reading.answer.endswith("Check with `df -i`. [[Inodes]]")


def test_a_sentence_about_the_sources_keeps_no_source_cited() -> None:
    sources = [
        source(1, "Out of inodes, no new files can be made. Check with `df -i`.", "Inodes"),
        source(2, "The information in this note is about free disk space.", "Disk space"),
    ]
    text = "It ran out of inodes [1]. The source for this information is [1][2]."
    reading = read(text, sources, "What ran out?")
    assert [c.ref for c in reading.citations] == ["[[Inodes]]"]


def test_each_source_of_a_run_that_holds_a_part_no_other_holds_stays() -> None:
    sources = [
        source(1, "The boiler was serviced on 3 May by Aldwych Heating.", "Boiler"),
        source(2, "The landlord paid £120 for the boiler service.", "Landlord"),
    ]
    text = "Aldwych Heating serviced the boiler on 3 May and the landlord paid £120. [1, 2]"
    reading = read(text, sources, "Who serviced the boiler, and who paid?")
    assert [c.ref for c in reading.citations] == ["[[Boiler]]", "[[Landlord]]"]


def test_a_claim_whose_name_no_shown_source_holds_is_cut_by_the_claim_check() -> None:
    reading = read("Ron grows prize-winning leeks in Harrogate [1].", SOURCES)
    assert reading.reanchored == 0 and reading.citations == [] and reading.answer == ""
    assert reading.main_unsupported
    assert reading.dropped_claims == ("Ron grows prize-winning leeks in Harrogate  .",)
    assert [(s.text, s.verdict) for s in reading.specifics] == [("Harrogate", "unsupported")]

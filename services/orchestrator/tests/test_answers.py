"""Reading numbered answers (issue 10): grounding, quotes and support, mechanically."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.grading import grade
from memex.orchestrator.answer.judging import informative, on_topic
from memex.orchestrator.answer.numbers import numbers, rewrite
from memex.orchestrator.answer.reading import declines, read
from memex.orchestrator.answer.streams import RefStream
from memex.orchestrator.items import ShownItem
from memex.orchestrator.lexical import segments
from memex.orchestrator.sources import Source


def source(number: int, text: str, title: str = "", **fields: object) -> Source:
    title = title or f"Note {number}"
    values: dict[str, object] = {
        "item_id": f"c{number}",
        "episode_id": f"ep{number}",
        "ref": f"[[{title}]]",
        "title": title,
        "text": text,
    }
    values.update(fields)
    item = ShownItem(**values)  # type: ignore[arg-type]
    return Source(number, item, text, tuple(segments(text)))


SOURCES = [
    source(1, "# Terms\n- Rent: **£48 per year**, due 1 January.\n- Key deposit: £10.", "Tenancy"),
    source(2, "Ron keeps the waiting list in a red notebook. He is the secretary.", "Ron"),
    source(3, "Sold six jars of jam for £3 each.", "Open day"),
]


@pytest.mark.parametrize(
    ("group", "expected"),
    [("1", [1]), ("1, 3", [1, 3]), ("2-4", [2, 3, 4]), ("^2", [2]), ("1 and 2", [1, 2])],
)
def test_marker_number_lists(group: str, expected: list[int]) -> None:
    assert numbers(group) == expected


def test_numbers_become_refs_and_numbers_that_name_nothing_vanish() -> None:
    text = "Rent is £48 a year [1]. Ron [2, 3] keeps it [Source 2]. Made up [7] [[Nowhere]]."
    assert rewrite(text, SOURCES) == (
        "Rent is £48 a year [[Tenancy]]. Ron [[Ron]] [[Open day]] keeps it [[Ron]]. "
        "Made up Nowhere."
    )


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


def test_a_markers_only_sentence_belongs_to_the_one_before() -> None:
    reading = read("The rent is £48 a year. [1]", SOURCES)
    assert [c.ref for c in reading.citations] == ["[[Tenancy]]"]
    assert reading.answer == "The rent is £48 a year. [[Tenancy]]"


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "The sources do not say how much it costs.",
        "There is no information about your blood type in the notes.",
        "This is not mentioned in the provided sources [1].",
        "",
    ],
)
def test_declining_is_recognised(text: str) -> None:
    assert declines(text)


@pytest.mark.parametrize(
    "text",
    ["The rent is £48 a year [1].", "Graham did not say why, but he paid £1,030 [2]."],
)
def test_answers_are_not_mistaken_for_declining(text: str) -> None:
    assert not declines(text)


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


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_streamed_numbers_never_show_raw_whatever_the_chunking(size: int) -> None:
    text = "The rent is £48 [1]. Ron [2,3] keeps [[Ron]] it [12] well [Source 1]. Paid [9]."
    stream = RefStream(SOURCES)
    out = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    out.append(stream.finish())
    joined = "".join(out)
    # What streams is what is stored: a marker naming nothing shown leaves no stray space.
    assert (
        joined
        == rewrite(text, SOURCES)
        == (
            "The rent is £48 [[Tenancy]]. Ron [[Ron]] [[Open day]] keeps [[Ron]] it well [[Tenancy]]."
            " Paid."
        )
    )
    assert not any("[1" in piece or "[2" in piece for piece in out)


def test_a_lone_bracket_is_released_once_it_cannot_be_a_marker() -> None:
    stream = RefStream(SOURCES)
    assert stream.feed("a [") == "a"
    assert stream.feed("x" * 30) == " [" + "x" * 30


def test_a_closing_number_vouches_for_the_uncited_sentences_before_it() -> None:
    text = "Rent is £48 per year. It is due 1 January. [1] Ron keeps the list [2]."
    reading = read(text, SOURCES)
    assert [c.ref for c in reading.citations] == ["[[Tenancy]]", "[[Ron]]"]
    assert reading.citations[0].support == "verbatim"  # "£48 per year" is in [1]
    assert reading.answer == (
        "Rent is £48 per year. It is due 1 January. [[Tenancy]] Ron keeps the list [[Ron]]."
    )


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


def test_a_claim_whose_name_no_shown_source_holds_is_cut_by_the_claim_check() -> None:
    reading = read("Ron grows prize-winning leeks in Harrogate [1].", SOURCES)
    assert reading.reanchored == 0 and reading.citations == [] and reading.answer == ""
    assert reading.main_unsupported
    assert reading.dropped_claims == ("Ron grows prize-winning leeks in Harrogate  .",)
    assert [(s.text, s.verdict) for s in reading.specifics] == [("Harrogate", "unsupported")]


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("What did I study at university?", "I studied at university [1].", False),
        ("What is my blood type?", "My blood type is A [1].", False),
        ("What did I run the Harewood race in?", "I ran the Harewood race in [1].", False),
        ("What does the allotment cost?", "The allotment costs £48 a year [1].", True),
        ("Who keeps the waiting list?", "Ron [2].", True),
        ("Did I pay the rent?", "Yes [1].", True),
        (
            "Which days am I meant to be in the office?",
            "I am meant to be in the office on the following days: [1], [2], [3].",
            False,
        ),
        ("Which days am I meant to be in the office?", "Tuesdays and Thursdays [2].", True),
        # The sources' headers after their numbers: the list of sources, copied.
        ("Which days am I meant to be in the office?", "On [1] Tenancy, [3] Open day.", False),
        ("Who keeps the waiting list?", "It is [2] Ron, the secretary.", True),  # one is an answer
    ],
)
def test_an_answer_that_only_restates_the_question_is_not_informative(
    question: str, answer: str, expected: bool
) -> None:
    assert informative(question, read(answer, SOURCES)) is expected


def test_source_numbers_followed_by_their_dates_list_the_sources() -> None:
    journal = [
        source(1, "Phone out of the bedroom.", "2026-11-22 — Looking back"),
        source(2, "Cake in the office.", "2026-06-02 — Warden GA"),
        source(3, "Beta went live.", "Beta Launch", date="2026-02-24"),
    ]
    question = "Which days am I meant to be in the office?"
    listed = read("On [1] 2026-11-22, [2] 2026-06-02 and [3] 24 February 2026.", journal)
    assert listed.lists_sources and not informative(question, listed)
    dated = read("The beta went live on [3] 24 February 2026.", journal)
    assert not dated.lists_sources and informative("When did the beta go live?", dated)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How much do I pay for contents insurance?", False),  # "paid" is no topic
        ("Where did I go on holiday this summer?", False),
        ("How much was the deposit I paid?", True),
        ("What did I pay?", True),  # nothing but the verb: it counts then
    ],
)
def test_common_verbs_alone_do_not_put_a_source_on_topic(question: str, expected: bool) -> None:
    deposit = [source(1, "Paid the £1,030 deposit and went back for the keys.", "Deposit")]
    assert on_topic(question, read("£1,030 [1].", deposit), deposit) is expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        # A bare amount from a note that shares one topical word of five with the question.
        ("How much was refunded for the cancelled whale-watching trip?", "$1,184.62 [1].", False),
        ("How much was my tax refund this year?", "$1,184.62 [1].", True),
        # Words of its own say what the value is: the share is not asked of them.
        (
            "How much was refunded for the cancelled whale-watching trip?",
            "The tax return brought back $1,184.62 [1].",
            True,
        ),
    ],
)
def test_a_bare_value_needs_a_source_about_the_questions_subject(
    question: str, answer: str, expected: bool
) -> None:
    tax = [source(1, "Tax return filed. Refund of $1,184.62 came in March.", "Tax return 2025")]
    assert on_topic(question, read(answer, tax), tax) is expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How much goes into my pension each month?", False),  # a month is no topic
        ("How much do I save each month?", True),
        ("What do I do each month?", True),  # nothing but the unit: it counts then
    ],
)
def test_units_of_time_alone_do_not_put_a_source_on_topic(question: str, expected: bool) -> None:
    savings = [source(1, "Save £150 a month. Failed, twice.", "Looking back")]
    assert on_topic(question, read("£150 a month [1].", savings), savings) is expected


@pytest.mark.parametrize(
    ("question", "also_called", "expected"),
    [
        ("What rating did I give Station Eleven?", (), False),  # another book's note
        ("When did I finish the Ishiguro novel?", (), True),  # a property names him
        ("What rating did I give the book in February?", (), True),  # a month is no name
        ("What rating did Shiv give it?", ("Shiv",), True),  # the header's other name
    ],
)
def test_a_question_that_names_something_needs_a_source_that_mentions_it(
    question: str, also_called: tuple[str, ...], expected: bool
) -> None:
    text = "author: Kazuo Ishiguro\nrating: 3\nfinished: 2026-02-03\nThe library has 11 copies."
    book = source(1, text, "Klara and the Sun")
    book = Source(1, book.item, book.excerpt, book.segments, also_called)
    assert on_topic(question, read("3 [1].", [book]), [book]) is expected


def test_a_name_counts_anywhere_in_the_cited_note_as_shown() -> None:
    # The cited chunk (a table of gifts) never says "Mom"; the same note's opening, also shown,
    # does. Another note's chunk saying it does not count.
    question = "What did I give Mom for her birthday this year?"
    table = "## Birthday gifts\n| Year | Gift |\n| 2026 (65) | Framed print of the Hopewell Rocks |"
    gifts = source(1, table, "Irene Marchand", episode_id="irene")
    opening = source(
        2, "relationship: mother\nMom. Retired teacher.", "Irene Marchand", episode_id="irene"
    )
    elsewhere = source(2, "Phoned Mom on Sunday.", "2026-11-29")
    answer = "I gave her a framed print of the Hopewell Rocks [1]."
    assert on_topic(question, read(answer, [gifts, opening]), [gifts, opening])
    assert not on_topic(question, read(answer, [gifts, elsewhere]), [gifts, elsewhere])


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


def test_a_claim_is_not_moved_to_a_source_that_holds_only_its_figure() -> None:
    tires = source(1, "Free inspection: front brake pads at 4 mm. Replace in the spring.", "Tires")
    pottery = source(2, "Pottery: threw 4 mugs, kept 2.", "Log")
    reading = read("$4 mm. Replace in the spring. [1]", [tires, pottery])
    assert reading.reanchored == 0 and reading.unfounded_money


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


def test_a_claim_whose_figure_only_another_source_holds_moves_to_that_source() -> None:
    sources = [
        source(1, "Chip time 2:04:37. Goal was sub-2:10.", "Kirkstall Half Marathon"),
        source(2, "Harewood was a tune-up for the Kirkstall half marathon.", "Harewood"),
    ]
    reading = read("I ran the Kirkstall half marathon in 2:04:37 [2].", sources)
    assert reading.reanchored == 1
    assert [c.ref for c in reading.citations] == ["[[Kirkstall Half Marathon]]"]


def test_a_name_counts_as_mentioned_by_its_folder_or_the_start_of_a_word() -> None:
    """ "Mac" is named by a note in mac/ and by "macOS"; "JS" asks for nothing (notes spell it
    out as JavaScript)."""
    caffeinate = source(
        1, "`caffeinate -d` stops display sleep.", "prevent-sleep", path="mac/prevent-sleep.md"
    )
    reading = read("Run `caffeinate -d` [1].", [caffeinate])
    assert on_topic("What keeps my Mac awake?", reading, [caffeinate])
    macos = source(1, "On macOS, `caffeinate -d` stops display sleep.", "prevent-sleep")
    assert on_topic("What keeps my Mac awake?", read("Run `caffeinate -d` [1].", [macos]), [macos])
    clone = source(1, "structuredClone copies deeply.", "structured-clone")
    reading = read("Use `structuredClone` [1].", [clone])
    assert on_topic("Which JS built-in copies deeply?", reading, [clone])
    assert not on_topic("What does Kubernetes copy?", reading, [clone])


def test_numbers_written_before_their_sentences_vouch_for_the_sentences_after_them() -> None:
    """An answer that opens with a number writes them first: "[1] fact. [2] fact." """
    reading = read("[2] Ron keeps the waiting list. [1] Rent is £48 per year.", SOURCES)
    assert [(c.ref, c.support) for c in reading.citations] == [
        ("[[Ron]]", "verbatim"),
        ("[[Tenancy]]", "verbatim"),
    ]
    assert reading.dropped_claims == () and not reading.main_unsupported

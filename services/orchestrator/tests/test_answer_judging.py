"""Judging a read answer for ask's abstention rules (issue 10; ``answer/judging.py``,
``answer/reading.py``): whether it declines, whether it says more than the question did, and
whether the notes it cites are about what the question asks."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.judging import informative, on_topic
from memex.orchestrator.answer.reading import declines, read
from memex.orchestrator.answer.sources import Source

from .fakes import SOURCES, source


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


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How did I set up a go.work workspace?", False),  # no cited note writes go.work
        ("How did I set up a `go.mod` for it?", True),
        ("What does `useEffect` build?", False),
        ("Which `go` subcommand installs my program?", True),
        ("How do I build and install a Go program?", True),
    ],
)
def test_a_question_that_names_a_thing_as_typed_needs_a_note_that_writes_it(
    question: str, expected: bool
) -> None:
    build = source(1, "Run `go install` in the folder with the go.mod to build it.", "go-build")
    reading = read("Run `go install` [1].", [build])
    assert on_topic(question, reading, [build]) is expected


def test_a_specific_to_type_is_something_said_though_every_word_is_the_questions() -> None:
    push = source(
        1, "There is a shorthand: prefix the branch with a `+` (`git push origin +main`)."
    )
    question = "What's the one-character shortcut for force-pushing main?"
    reading = read("The one-character shortcut for force-pushing main is `+` [1].", [push])
    assert informative(question, reading)

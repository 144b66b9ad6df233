"""An answer's source numbers (issue 10; ``answer/numbers.py``, ``answer/streams.py``): the
``[n]`` markers a model writes, rewritten as refs (streamed or whole, never shown raw), and which
sentences a number vouches for: the one before it, those before a closing number, those after a
leading one."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.numbers import numbers, rewrite
from memex.orchestrator.answer.reading import read
from memex.orchestrator.answer.streams import RefStream

from .fakes import SOURCES


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


def test_a_markers_only_sentence_belongs_to_the_one_before() -> None:
    reading = read("The rent is £48 a year. [1]", SOURCES)
    assert [c.ref for c in reading.citations] == ["[[Tenancy]]"]
    assert reading.answer == "The rent is £48 a year. [[Tenancy]]"


def test_a_closing_number_vouches_for_the_uncited_sentences_before_it() -> None:
    text = "Rent is £48 per year. It is due 1 January. [1] Ron keeps the list [2]."
    reading = read(text, SOURCES)
    assert [c.ref for c in reading.citations] == ["[[Tenancy]]", "[[Ron]]"]
    assert reading.citations[0].support == "verbatim"  # "£48 per year" is in [1]
    assert reading.answer == (
        "Rent is £48 per year. It is due 1 January. [[Tenancy]] Ron keeps the list [[Ron]]."
    )


def test_numbers_written_before_their_sentences_vouch_for_the_sentences_after_them() -> None:
    """An answer that opens with a number writes them first: "[1] fact. [2] fact." """
    reading = read("[2] Ron keeps the waiting list. [1] Rent is £48 per year.", SOURCES)
    assert [(c.ref, c.support) for c in reading.citations] == [
        ("[[Ron]]", "verbatim"),
        ("[[Tenancy]]", "verbatim"),
    ]
    assert reading.dropped_claims == () and not reading.main_unsupported


def test_numbers_taken_out_of_a_run_leave_no_separators_behind() -> None:
    assert rewrite("Rent is £48 [1], [7], [9].", SOURCES) == "Rent is £48 [[Tenancy]]."
    assert rewrite("It is [7],, [1]; [2].", SOURCES) == "It is [[Tenancy]] [[Ron]]."
    assert rewrite("See [[Ron]] and [1].", SOURCES) == "See [[Ron]] and [[Tenancy]]."


def test_a_wikilink_to_no_shown_note_in_a_citations_place_leaves_no_words() -> None:
    # In the prose a wikilink is a name and keeps its words; after the sentence, it cites.
    assert rewrite("Warn with a flag. [[performance-warnings]]", SOURCES) == "Warn with a flag."
    assert rewrite("Rent is £48. [1] [[nowhere]]", SOURCES) == "Rent is £48. [[Tenancy]]"
    assert rewrite("I met [[Graham Pearce]].", SOURCES) == "I met Graham Pearce."

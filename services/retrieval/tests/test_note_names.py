"""Notes named in a query by title or alias (the graph channel's notes-as-entities)."""

from __future__ import annotations

from memex.retrieval.note_names import NoteNames


def test_a_note_is_named_by_its_title_or_an_alias_in_whole_words() -> None:
    names = NoteNames(
        {
            "n1": ["Siobhan Delorme", "Shiv"],
            "n2": ["Cole Harbour Trail 25K"],
            "n3": ["2025-06-21"],
        }
    )
    assert names("When's Shiv's birthday?") == ("n1",)
    assert names("what did SIOBHAN DELORME lend me") == ("n1",)
    assert names("my time at the cole harbour trail 25k") == ("n2",)
    assert names("What happened on 2025-06-21?") == ("n3",)
    assert names("Shiva the destroyer; Cole Harbour") == ()


def test_function_words_single_letters_and_bare_numbers_never_name_a_note() -> None:
    names = NoteNames(
        {"n1": ["The", "A"], "n2": ["Home", "What"], "n3": ["", "   "], "n4": ["4983"]}
    )
    assert names("What is the home insurance? A question about 4983") == ("n2",)


def test_one_name_can_stand_for_several_notes() -> None:
    names = NoteNames({"n1": ["Dev"], "n2": ["Dev"], "n3": ["Dev Patel"]})
    assert names("Dev Patel's surname") == ("n1", "n2", "n3")
    assert NoteNames({})("anything") == ()

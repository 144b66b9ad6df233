"""Notes named in a query by title or alias (the graph channel's notes-as-entities)."""

from __future__ import annotations

from memex.retrieval.note_names import matcher


def test_a_note_is_named_by_its_title_or_an_alias_in_whole_words() -> None:
    names = matcher(
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


def test_function_words_single_letters_bare_numbers_and_sentences_never_name_a_note() -> None:
    names = matcher(
        {
            "n1": ["The", "A"],
            "n2": ["Home", "What"],
            "n3": ["", "   "],
            "n4": ["4983"],
            "n5": ["What is the home insurance for a flat"],
        }
    )
    # A title of seven words or more is a sentence, not something a question names.
    assert names("What is the home insurance for a flat? A question about 4983") == ("n2",)


def test_one_name_can_stand_for_several_notes() -> None:
    names = matcher({"n1": ["Dev"], "n2": ["Dev"], "n3": ["Dev Patel"]})
    assert names("Dev Patel's surname") == ("n1", "n2", "n3")
    assert matcher({})("anything") == ()

"""Whole-word alias matching, shared by retrieval and the orchestrator."""

from __future__ import annotations

from memex.shared.aliases import holds_words, other_names


def test_words_are_found_whole_and_without_case() -> None:
    assert holds_words("Who is Chi?", "chi")
    assert holds_words("Is that my sister's flat?", "my sister")
    assert not holds_words("Chioma Okafor", "Chi")
    assert not holds_words("Who is Chi?", "C.h")  # a dot in a name is a dot, not any character


def test_other_names_are_the_aliases_a_title_does_not_say() -> None:
    names = ["Chi", "Chioma", "my sister", "okafor"]
    assert other_names("Chioma Okafor", names) == ("Chi", "my sister")

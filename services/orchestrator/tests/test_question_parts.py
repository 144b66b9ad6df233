"""The parts of a compound question (issue 35), found by form."""

from __future__ import annotations

import pytest

from memex.orchestrator.question_parts import question_parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "How much did the repair cost, and why?",
            ["How much did the repair cost?", "Why?"],
        ),
        (
            "Which port does it use and how do I change it?",
            ["Which port does it use?", "How do I change it?"],
        ),
        (
            "My build froze. What keys stop it, and where are they listed?",
            ["What keys stop it?", "Where are they listed?"],  # the context asks nothing
        ),
        ("What did I buy and sell last week?", ["What did I buy and sell last week?"]),
        (
            "Is there a way to test it and have it thrown away?",
            ["Is there a way to test it and have it thrown away?"],
        ),
        ("When is the party?", ["When is the party?"]),
    ],
)
def test_a_question_is_split_where_a_conjunction_opens_another_question(
    question: str, parts: list[str]
) -> None:
    assert question_parts(question) == parts

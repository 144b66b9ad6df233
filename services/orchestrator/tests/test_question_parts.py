"""The parts of a compound question (issue 35), found by form."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.judging import unaddressed_parts
from memex.orchestrator.answer.question_parts import question_parts, standalone
from memex.orchestrator.answer.reading import Reading
from memex.orchestrator.memory.items import GroundingReport


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


def _reading(*claims: str) -> Reading:
    return Reading(
        answer=" ".join(claims),
        citations=[],
        report=GroundingReport(0, 0),
        declined=False,
        support=0.0,
        attributed=False,
        claims=claims,
    )


@pytest.mark.parametrize(
    ("question", "claims", "left_out"),
    [
        (
            "Which flag clones without history, and how long can a table name be?",
            ["Pass `--depth 1` to clone it without history."],
            ["How long can a table name be?"],
        ),
        (
            "Which flag clones without history, and how long can a table name be?",
            ["Pass `--depth 1` to clone without history.", "A table name can be 63 bytes."],
            [],
        ),
        # A sentence that adds only a specific still answers its part.
        (
            "What's the shortcut for force-pushing main, and which safer flag should I use?",
            ["The shortcut for force-pushing main is `+main`.", "Use `--force-with-lease`."],
            [],
        ),
        # "Why?" has no word of its own: a sentence beyond the amount's answers it.
        ("How much did the repair cost, and why?", ["The repair cost £90."], ["Why?"]),
        (
            "How much did the repair cost, and why?",
            ["The repair cost £90.", "The valve had failed."],
            [],
        ),
        ("How much did the repair cost?", ["It cost money."], []),  # not compound
        # A part that asks for a figure, a flag or a version is not answered by words alone,
        # whatever words they share with it.
        (
            "Which flag starts it in safe mode, and what error number does it give?",
            ["Pass `--safe` to start it in safe mode.", "It gives an error for the number."],
            ["What error number does it give?"],
        ),
        (
            "Which flag starts it in safe mode, and what error number does it give?",
            ["Pass `--safe` to start it in safe mode.", "It gives error 1175."],
            [],
        ),
        (
            "How many workers does it start, and which port does it listen on?",
            ["It starts four workers.", "It listens on the default port."],
            ["Which port does it listen on?"],
        ),
        # One sentence may answer both parts, a clause each.
        (
            "When does my promotion to Lead Designer take effect, and what's the new salary?",
            [
                "The promotion to Lead Designer takes effect on 1 July, and the new salary is £58,000."
            ],
            [],
        ),
    ],
)
def test_the_parts_an_answer_leaves_out(
    question: str, claims: list[str], left_out: list[str]
) -> None:
    assert unaddressed_parts(question, _reading(*claims)) == left_out


@pytest.mark.parametrize(
    ("question", "alone"),
    [
        (
            "How much of my deposit did Graham agree to give back, and why?",
            [
                "How much of my deposit did Graham agree to give back?",
                "For what reason did Graham agree to give back?",
            ],
        ),
        ("When did you move, and why?", ["When did you move?", "For what reason did you move?"]),
        # A part with words of its own stands as it is; so does a question word with no clause
        # before it to ask of.
        (
            "Which port does it use and how do I change it?",
            ["Which port does it use?", "How do I change it?"],
        ),
        ("Who came to the party, and why?", ["Who came to the party?", "Why?"]),
        ("When is the party?", ["When is the party?"]),
        ("Where did you move, and when?", ["Where did you move?", "When did you move?"]),
    ],
)
def test_a_part_that_is_only_a_question_word_is_asked_of_the_clause_before_it(
    question: str, alone: list[str]
) -> None:
    assert [standalone(part, question) for part in question_parts(question)] == alone

"""Titles (SPEC B11), queued-turn context (SPEC B13) and redaction (SPEC B4)."""

from __future__ import annotations

import pytest

from memex.orchestrator.conversation.text import PriorTurn, compose_query, conversation_title
from memex.orchestrator.record.redaction import redact


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("What did we agree with the landlord?", "What did we agree with the landlord?"),
        (
            "What did we agree with the landlord about the deposit and the broken boiler in spring",
            "What did we agree with the landlord about the deposit and",
        ),
        ("x" * 80, "x" * 60),
        ("  spaced\n\nout   message ", "spaced out message"),
    ],
)
def test_titles_are_cut_at_a_word_boundary_within_60_characters(message: str, title: str) -> None:
    assert conversation_title(message) == title
    assert len(conversation_title(message)) <= 60


def test_context_replays_the_newest_turns_that_fit_oldest_first() -> None:
    prior = [
        PriorTurn("user", "first " * 30),
        PriorTurn("assistant", "an answer"),
        PriorTurn("user", "and the deposit?"),
        PriorTurn("assistant", "It was £800."),
    ]
    composed = compose_query(prior, "when was it paid?", cap=80)
    assert composed == (
        "Earlier in this conversation:\nassistant: an answer\nuser: and the deposit?\n"
        "assistant: It was £800.\n\nNow: when was it paid?"
    )


def test_a_thread_without_turns_or_over_the_cap_passes_the_question_through() -> None:
    assert compose_query([], "hello?") == "hello?"
    assert compose_query([PriorTurn("user", "x" * 5000)], "hello?", cap=4000) == "hello?"


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("write to dana.ruiz@example.com today", "[EMAIL]"),
        ("call +44 20 7946 0958 after six", "[PHONE]"),
        ("card 4111 1111 1111 1111 exp 12/29", "[CARD]"),
        ("IBAN GB29 NWBK 6016 1331 9268 19", "[IBAN]"),
        ("account number 12345678", "[ACCOUNT]"),
        ("key sk-proj-abcdefghijklmnop1234", "[SECRET]"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "[SECRET]"),
        ("password = hunter2!", "[SECRET]"),
    ],
)
def test_personal_data_is_redacted(text: str, label: str) -> None:
    redacted = redact(text)
    assert label in redacted
    for secret in (
        "dana.ruiz",
        "7946",
        "4111",
        "6016",
        "12345678",
        "abcdefghijklmnop",
        "eyJhbGci",
        "hunter2",
    ):
        assert secret not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "Warden Retro — Sprint 14 (2025-09-26)",
        "fixed on 2026-03-14, 3 visits",
        "from 01/02/2026 to 14.03.2026",
        "week 11, 13 September 2026",
    ],
)
def test_dates_and_small_numbers_are_not_phone_numbers(text: str) -> None:
    assert redact(text) == text


def test_sensitive_item_text_is_redacted_and_ordinary_text_kept() -> None:
    note = "Therapy session: talked about the panic attacks."
    text = f"Excerpts:\n{note}\nAlso: the boiler was fixed on 2026-03-14, 3 visits."
    redacted = redact(text, [note])
    assert "panic" not in redacted
    assert "the boiler was fixed on 2026-03-14, 3 visits." in redacted

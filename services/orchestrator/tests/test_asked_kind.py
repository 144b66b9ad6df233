"""What kind of thing a question asks for, and whether an answer gives one (issue 35)."""

from __future__ import annotations

import pytest

from memex.orchestrator.answer.asked_kind import asked_kind, gives_kind


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What Node flag raises the memory limit?", "flag"),
        ("Which plugin brings my sessions back after a reboot?", "plugin"),
        ("Which flags did I pass to the build?", "flag"),
        ("What version of the compiler added it?", "version"),
        ("What keyboard shortcut opens the palette?", "shortcut"),
        ("How much was the deposit?", ""),
        ("What is the flag for?", ""),  # "what is": no kind named
        # Two things asked: each part is answered on its own terms, not held to one kind.
        ("Which flag does a dry run, and what do I add to see the files?", ""),
    ],
)
def test_the_kind_a_question_asks_for(question: str, kind: str) -> None:
    assert asked_kind(question) == kind


@pytest.mark.parametrize(
    ("kind", "claim", "note", "gives"),
    [
        ("flag", "Use `--max-old-space-size=4096`.", "heap", True),
        ("flag", "Run `git push --force-with-lease` instead.", "push", True),
        ("flag", "The `node-prune` binary removes excess files.", "prune node_modules", False),
        ("version", "It arrived in `3.0.0`.", "release notes", True),
        ("version", "It arrived in Ruby 3.0.0.", "release notes", True),
        ("key", "Press `<C-\\><C-n>`.", "terminal mode", True),
        ("plugin", "I used the `bind-key a send-prefix` command.", "nested sessions", False),
        ("plugin", "I used tmux-resurrect.", "The tmux-resurrect plugin saves sessions.", True),
        ("plugin", "I used tmux-resurrect.", "Plugins: tmux-resurrect.", True),
    ],
)
def test_an_answer_gives_the_kind_by_its_form_or_its_note(
    kind: str, claim: str, note: str, gives: bool
) -> None:
    assert gives_kind(kind, [claim], [note]) is gives

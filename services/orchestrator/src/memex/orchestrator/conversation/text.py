"""Small text rules: conversation titles (SPEC B11) and queued-turn context (SPEC B13)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TITLE_LIMIT = 60


def conversation_title(first_message: str, limit: int = TITLE_LIMIT) -> str:
    """The first message on one line, at most ``limit`` characters, cut at a word boundary where
    one exists."""
    text = " ".join(first_message.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0]
    return cut if cut and len(cut) <= limit else text[:limit]


@dataclass(frozen=True)
class PriorTurn:
    """An earlier turn of a thread, oldest first."""

    role: str  # "user" or "assistant"
    text: str


def compose_query(prior: Sequence[PriorTurn], question: str, cap: int = 4000) -> str:
    """The question with as much of the thread as fits in ``cap`` characters (no model call).

    Turns are taken newest first until the cap, then replayed oldest first as
    ``Earlier in this conversation: …`` followed by ``Now: <question>``. With no prior turn, or
    none that fits, the question passes through unchanged.
    """
    kept: list[str] = []
    used = 0
    for turn in reversed(prior):
        line = f"{turn.role}: {' '.join(turn.text.split())}"
        if used + len(line) + 1 > cap:
            break
        kept.append(line)
        used += len(line) + 1
    if not kept:
        return question
    history = "\n".join(reversed(kept))
    return f"Earlier in this conversation:\n{history}\n\nNow: {question}"

"""`memex eval --replay`, the regression mode, without the transport: which logged asks to ask
again, and how each new answer differs from the logged one. Pure functions; exact definitions are
in docs/eval.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memex.cli.eval.matching import ref_key
from memex.cli.eval.scoring import Outcome


@dataclass(frozen=True)
class Logged:
    """An ask as telemetry logged it."""

    turn_id: str
    question: str
    persona: str
    answer: str
    abstained: bool
    cited_refs: tuple[str, ...]
    created_at: str = ""


@dataclass(frozen=True)
class Change:
    """How a replayed answer differs from the logged one; ``baseline`` False when the log kept no
    answer (asks logged before answers were kept), so only abstention is compared."""

    logged: Logged
    now: Outcome
    baseline: bool
    answer_changed: bool
    abstention_flipped: bool
    refs_added: tuple[str, ...]
    refs_removed: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(
            self.now.error
            or self.answer_changed
            or self.abstention_flipped
            or self.refs_added
            or self.refs_removed
        )


def squash(text: str) -> str:
    """Whitespace squashed to single spaces, ends trimmed (case and wording kept)."""
    return re.sub(r"\s+", " ", text).strip()


def compare(logged: Logged, now: Outcome) -> Change:
    """The difference between a logged answer and the same question asked again."""
    baseline = bool(logged.answer)
    if now.error:
        return Change(logged, now, baseline, False, False, (), ())
    before = {ref_key(r): r for r in logged.cited_refs}
    after = {ref_key(r): r for r in now.cited_refs}
    return Change(
        logged,
        now,
        baseline,
        answer_changed=baseline and squash(logged.answer) != squash(now.answer),
        abstention_flipped=logged.abstained != now.abstained,
        refs_added=tuple(after[k] for k in after if k not in before) if baseline else (),
        refs_removed=tuple(before[k] for k in before if k not in after) if baseline else (),
    )


def replay_set(logged: Sequence[Logged], limit: int = 0) -> list[Logged]:
    """The asks to replay: newest first, one per (question, persona), at most ``limit`` (0: all)."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for ask in logged:
        key = (squash(ask.question).casefold(), ask.persona)
        if key not in seen:
            seen.add(key)
            chosen.append(ask)
    return chosen[:limit] if limit else chosen

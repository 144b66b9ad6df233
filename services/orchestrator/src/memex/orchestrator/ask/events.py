"""What an ask gives back (SPEC B8): the structured ``AskResult``, and the events an ask streams on
its way there (``Started``, ``Draft``..., ``Redraft``, then the ``AskResult``), which Ask, AskStream
(``wire/servicer.py``) and the queued-turn worker read. ``ask/asker.py``'s ``Asker`` yields them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memex.orchestrator.memory.items import Citation, GroundingReport


@dataclass
class AskResult:
    """The structured result of an ask (SPEC B8)."""

    answer: str
    citations: list[Citation]
    persona: str
    grounding: GroundingReport
    abstained: bool
    stages: list[str]
    reframed_question: str = ""
    opinion: str = ""
    withheld: int = 0
    model: str = ""
    latency_ms: float = 0.0
    turn_id: str = ""
    as_of: str = ""
    """The day whose memory answered (YYYY-MM-DD); "" for now (docs/as-of.md)."""
    dropped_steps: list[str] = field(default_factory=list)
    # "", "empty", "withheld", "declined", "uncited", "ungrounded", "unsupported", "off_topic"
    # or "uninformative"
    abstain_reason: str = ""


@dataclass(frozen=True)
class Started:
    """The sources are chosen and the model is about to write."""

    model: str
    persona: str
    sources: list[str]
    source_paths: list[str]  # each source's note path, "" for a record


@dataclass(frozen=True)
class Draft:
    """Answer text as the model writes it, source numbers already read as refs (unchecked)."""

    text: str


@dataclass(frozen=True)
class Redraft:
    """The draft so far is set aside: the first pass did not stand, and the model now reads the
    whole briefing; or it stood, but the whole briefing answered otherwise. Drafts after this
    start a new answer."""

    reason: str


# The checked answer (``AskResult``) is always the last event, as itself: no envelope around it.
AskEvent = Started | Draft | Redraft | AskResult

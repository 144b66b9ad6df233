"""What the orchestrator shows the model: retrieved items with their provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Support = Literal["verbatim", "paraphrase", "inference"]


@dataclass(frozen=True)
class ShownItem:
    """One retrieved item as briefed to the model; citations may only name these (SPEC B2)."""

    item_id: str
    text: str
    ref: str  # "[[Note Title]]" or "collection:id"
    episode_id: str = ""
    title: str = ""
    date: str = ""
    kind: Literal["chunk", "record", "belief", "observation"] = "chunk"
    sensitive: bool = False
    score: float = 0.0
    channel_scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """A citation that survived grounding, with its re-graded support label."""

    ref: str
    item_id: str
    episode_id: str
    quote: str
    support: Support


@dataclass(frozen=True)
class GroundingReport:
    """How many citations the model gave, how many named something it was shown."""

    cited: int
    grounded: int
    dropped: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Share of citations that were grounded; 0 when nothing was cited."""
        return self.grounded / self.cited if self.cited else 0.0

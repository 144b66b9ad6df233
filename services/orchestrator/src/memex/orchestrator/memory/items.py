"""What the orchestrator shows the model: retrieved items with their provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["chunk", "record", "belief", "observation"]
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
    kind: Kind = "chunk"
    sensitive: bool = False
    score: float = 0.0
    channel_scores: dict[str, float] = field(default_factory=dict)
    # The rest of the provenance retrieval gives, kept so surfaces lose nothing (issue 11).
    path: str = ""
    heading: str = ""
    collection: str = ""
    tags: tuple[str, ...] = ()
    channel_ranks: dict[str, int] = field(default_factory=dict)
    fused_score: float = 0.0
    recency_factor: float = 1.0
    salience_factor: float = 1.0
    attributes: dict[str, Any] = field(default_factory=dict)
    rerank_score: float | None = None  # set only when retrieval reranked the item


def note_path(item: ShownItem) -> str:
    """The vault path of the note an item is a chunk of; "" for anything else."""
    return item.path if item.kind == "chunk" else ""


@dataclass(frozen=True)
class Record:
    """A structured record as read from an allowlisted collection."""

    collection: str
    id: str
    fields: dict[str, Any]
    citation: str
    sensitive: bool = False

    @property
    def date(self) -> str:
        """The record's date (YYYY-MM-DD, or an ISO timestamp's date part); "" when undated."""
        for name in ("date", "due", "observed_at", "created"):
            value = self.fields.get(name)
            if isinstance(value, str) and value:
                return value[:10]
        return ""

    @property
    def tags(self) -> tuple[str, ...]:
        """The record's tags, lower-case without "#"."""
        raw = self.fields.get("tags")
        return tuple(str(t).lstrip("#").casefold() for t in raw) if isinstance(raw, list) else ()


@dataclass(frozen=True)
class NoteSection:
    """Where one chunk lies in a note's text: ``text[start:end]``."""

    id: str
    ordinal: int
    heading: str
    start: int
    end: int


@dataclass(frozen=True)
class Note:
    """A whole note, as a citation links to it."""

    episode_id: str
    title: str
    path: str
    date: str
    tags: tuple[str, ...]
    sensitive: bool
    text: str
    sections: tuple[NoteSection, ...] = ()
    versions: tuple[NoteVersion, ...] = ()
    """Every version of the note memex kept, oldest first (docs/as-of.md)."""


@dataclass(frozen=True)
class NoteVersion:
    """One kept version of a note and when it held (ISO 8601 UTC; ``valid_to`` "" for the
    current one)."""

    episode_id: str
    number: int
    valid_from: str
    valid_to: str = ""


@dataclass(frozen=True)
class Timeline:
    """An entity and the dated items about it (oldest first, undated last)."""

    entity: Record
    entries: tuple[tuple[str, ShownItem], ...]


@dataclass(frozen=True)
class Citation:
    """A citation that survived grounding, with its re-graded support label."""

    ref: str
    item_id: str
    episode_id: str
    quote: str
    support: Support
    path: str = ""  # the cited note's vault path; "" for a record


@dataclass(frozen=True)
class CheckedSpecific:
    """A specific an answer stated (a figure, a version, a command...) and the claim check's
    verdict on it: ``supported`` with the cited source that holds it, ``restated`` when the
    question itself writes it (not a claim), or ``unsupported``."""

    text: str
    kind: str
    verdict: str
    ref: str = ""


@dataclass(frozen=True)
class GroundingReport:
    """How many citations the model gave, how many named something it was shown; and the claim
    check: every specific with its verdict, and the sentences cut for an unsupported one."""

    cited: int
    grounded: int
    dropped: tuple[str, ...] = ()
    specifics: tuple[CheckedSpecific, ...] = ()
    dropped_claims: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Share of citations that were grounded; 0 when nothing was cited."""
        return self.grounded / self.cited if self.cited else 0.0


def record_item(record: Record) -> ShownItem:
    """A structured record as an item to brief the model with: "field: value" lines."""
    fields = record.fields
    lines = [
        f"{key}: {value}"
        for key, value in fields.items()
        if key != "id" and value not in ("", None, [])
    ]
    kind = {"beliefs": "belief", "observations": "observation"}.get(record.collection, "record")
    return ShownItem(
        item_id=f"{record.collection}:{record.id}",
        text="\n".join(lines),
        ref=record.citation,
        title=str(fields.get("name") or fields.get("title") or ""),
        date=record.date,
        kind=kind,  # type: ignore[arg-type]
        sensitive=record.sensitive,
        collection=record.collection,
        tags=record.tags,
        attributes=dict(fields),
    )

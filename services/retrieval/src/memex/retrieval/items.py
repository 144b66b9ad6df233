"""A search result as the service builds it: one fused item with its provenance and the
reasons for its rank, made from a chunk and its note or from a record (no gRPC)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memex.retrieval.fusion import ChannelHit
from memex.retrieval.ingest.documents import locator
from memex.retrieval.store.base import NoteMeta, Record


@dataclass
class Item:
    """One fused result with its provenance and the reasons for its rank."""

    id: str
    kind: str  # chunk | record | belief | observation
    text: str
    episode_id: str = ""
    date: str = ""
    title: str = ""
    path: str = ""
    heading: str = ""
    citation: str = ""
    sensitive: bool = False
    collection: str = ""
    channels: list[ChannelHit] = field(default_factory=list)
    fused: float = 0.0
    recency: float = 1.0
    salience: float = 1.0
    rerank: float | None = None  # the reranker's raw score, when one ran
    score: float = 0.0
    attributes: dict[str, Any] = field(default_factory=dict)


def fill_chunk(item: Item, text: str, heading: str) -> None:
    """A chunk item's text and heading, once read. A document's chunk lies on one page, one
    message or one stretch of a memo, and its citation names it (``documents.locator``)."""
    item.text, item.heading = text, heading
    item.citation += locator(item.path, heading)


def chunk_item(chunk_id: str, note: NoteMeta, channels: list[ChannelHit], fused: float) -> Item:
    """A chunk as a result item, with its note's metadata and no text yet."""
    return Item(
        id=chunk_id,
        kind="chunk",
        text="",
        episode_id=note.id,
        date=note.date,
        title=note.title,
        path=note.path,
        citation=f"[[{note.title}]]",
        sensitive=note.sensitive,
        channels=channels,
        fused=fused,
        # note_version: the note's fingerprint as indexed, so an answer's evidence bundle can
        # say which version of the note an excerpt came from (issue 37).
        attributes={
            "tags": list(note.tags),
            "aliases": list(note.aliases),
            "note_version": note.fingerprint,
        },
    )


def record_item(record: Record, note: Any, channels: list[ChannelHit], fused: float) -> Item:
    """A record as a result item; its citation is the note standing for it, if any (SPEC B2)."""
    kind = {"beliefs": "belief", "observations": "observation"}.get(record.collection, "record")
    fields = dict(record.fields)
    title = str(fields.get("name") or fields.get("title") or (note.title if note else record.ref))
    return Item(
        id=record.ref,
        kind=kind,
        text=record.text,
        episode_id=note.id if note else "",
        date=record.date or "",
        title=title,
        path=note.path if note else "",
        citation=f"[[{note.title}]]" if note else record.ref,
        sensitive=record.sensitive,
        collection=record.collection,
        channels=channels,
        fused=fused,
        attributes=fields,
    )


def record_salience(record: Record) -> float:
    for name in ("salience", "importance", "confidence"):
        value = record.fields.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return min(max(float(value) / 5 if value > 1 else float(value), 0.0), 1.0)
    return 0.5

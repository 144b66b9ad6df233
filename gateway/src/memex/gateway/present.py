"""What every surface shows a person or a client, defined once (issue 11).

The HTTP API, the MCP tools and the CLI all build their results here, from the orchestrator's
protos: one vocabulary of channels, item kinds and support labels, one shape of citation, search
hit, record, timeline and note. A surface may add fields of its own around these, never redefine
them.
"""

from __future__ import annotations

from typing import Any, Literal

from google.protobuf import json_format
from pydantic import BaseModel, Field

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.shared.channels import CHANNEL_NAMES, CHANNELS

ChannelName = Literal["vector", "keyword", "graph", "beliefs", "observations"]
SupportName = Literal["verbatim", "paraphrase", "inference", "unchecked"]
KindName = Literal["chunk", "record", "belief", "observation", "unknown"]

SUPPORT: dict[int, SupportName] = {
    common_pb2.SUPPORT_VERBATIM: "verbatim",
    common_pb2.SUPPORT_PARAPHRASE: "paraphrase",
    common_pb2.SUPPORT_INFERENCE: "inference",
}
# How a person reads each support level. "unchecked": the citation was never graded (e.g. a
# conversation stored before grading existed); every checked one has one of the other three.
SUPPORT_LABELS: dict[SupportName, str] = {
    "verbatim": "verbatim",
    "paraphrase": "paraphrase",
    "inference": "reading between the lines",
    "unchecked": "unchecked",
}
KINDS: dict[int, KindName] = {
    opb.ITEM_KIND_CHUNK: "chunk",
    opb.ITEM_KIND_RECORD: "record",
    opb.ITEM_KIND_BELIEF: "belief",
    opb.ITEM_KIND_OBSERVATION: "observation",
}


def channel_enums(names: list[str]) -> list[common_pb2.Channel.ValueType]:
    """Channel names as enums; ValueError naming the choices for an unknown one."""
    unknown = [n for n in names if n not in CHANNELS]
    if unknown:
        raise ValueError(f"unknown channel {unknown[0]!r}: use {', '.join(CHANNELS)}")
    return [CHANNELS[n] for n in names]


def support_name(value: int) -> SupportName:
    """A support enum as its word ("unchecked" for an ungraded citation)."""
    return SUPPORT.get(value, "unchecked")


class Citation(BaseModel):
    """A checked citation: always one of the items the answer was built from."""

    ref: str = Field(description='"[[Note Title]]" for notes, "collection:id" for records.')
    item_id: str = Field(description="The chunk or record the citation rests on.")
    episode_id: str = Field(description="The note it belongs to; empty for records.")
    path: str = Field(
        default="",
        description="The note's path in the vault, e.g. 'legal/Flat Deposit.md'; empty for a "
        "record.",
    )
    quote: str = Field(description="The quote given, if any.")
    support: SupportName = Field(description="How strongly the cited text supports the quote.")
    support_label: str = Field(
        description='For people: "verbatim", "paraphrase", "reading between the lines" or '
        '"unchecked".'
    )

    @classmethod
    def from_proto(cls, c: common_pb2.Citation) -> Citation:
        """The proto citation with its support spelled out."""
        support = support_name(c.support)
        return cls(
            ref=c.ref,
            item_id=c.item_id,
            episode_id=c.episode_id,
            path=c.path,
            quote=c.quote,
            support=support,
            support_label=SUPPORT_LABELS[support],
        )


def citations(items: Any) -> list[Citation]:
    """Proto citations as models."""
    return [Citation.from_proto(c) for c in items]


class Provenance(BaseModel):
    """Where an item came from."""

    episode_id: str = Field(description="The note's id; a record's standing note, or empty.")
    date: str = Field(description="YYYY-MM-DD.")
    title: str
    path: str = Field(description="Path of the note relative to the vault root.")
    heading: str = Field(description='Heading path inside the note, e.g. "Plans > Q3".')


class ChannelScore(BaseModel):
    """One retrieval channel's view of an item."""

    channel: str = Field(description="vector, keyword, graph, beliefs or observations.")
    rank: int = Field(description="1-based rank in that channel; 0 when not known.")
    score: float


class SearchHit(BaseModel):
    """One item read from memory, with its citation, provenance and ranking."""

    id: str = Field(description='Chunk id or "collection:id".')
    kind: KindName
    text: str
    citation: str = Field(description='Cite it as this: "[[Note Title]]" or "collection:id".')
    sensitive: bool
    collection: str = Field(description="A record's collection; empty for note chunks.")
    tags: list[str]
    provenance: Provenance
    channel_scores: list[ChannelScore] = Field(description="The channels that found it.")
    fused_score: float = Field(
        description="Fused score before adjustments (RRF or convex fusion, as configured)."
    )
    recency_factor: float
    salience_factor: float
    score: float = Field(
        description="fused x recency x salience, or the reranked score (0..1) after a rerank; "
        "results are in its order."
    )
    attributes: dict[str, Any]
    rerank_score: float | None = Field(
        None, description="The rerank model's raw score; null when no reranker ran."
    )

    @classmethod
    def from_proto(cls, i: opb.MemoryItem) -> SearchHit:
        """An orchestrator item as a model."""
        p = i.provenance
        return cls(
            id=i.id,
            kind=KINDS.get(i.kind, "unknown"),
            text=i.text,
            citation=i.citation,
            sensitive=i.sensitive,
            collection=i.collection,
            tags=list(i.tags),
            provenance=Provenance(
                episode_id=p.episode_id, date=p.date, title=p.title, path=p.path, heading=p.heading
            ),
            channel_scores=[
                ChannelScore(
                    channel=CHANNEL_NAMES.get(s.channel, "unknown"), rank=s.rank, score=s.score
                )
                for s in i.channel_scores
            ],
            fused_score=i.fused_score,
            recency_factor=i.recency_factor,
            salience_factor=i.salience_factor,
            score=i.score,
            attributes=json_format.MessageToDict(i.attributes),
            rerank_score=i.rerank_score if i.HasField("rerank_score") else None,
        )


class Record(BaseModel):
    """A structured record (entity, event, inbox item, belief, ...) with its citation."""

    collection: str
    id: str
    fields: dict[str, Any]
    citation: str
    sensitive: bool

    @classmethod
    def from_proto(cls, r: opb.MemoryRecord) -> Record:
        """An orchestrator record as a model."""
        return cls(
            collection=r.collection,
            id=r.id,
            fields=json_format.MessageToDict(r.fields),
            citation=r.citation,
            sensitive=r.sensitive,
        )


class TimelineEntry(BaseModel):
    """One dated item about the entity."""

    date: str
    item: SearchHit


class Timeline(BaseModel):
    """Everything about one person (or other entity), oldest first, undated last."""

    entity: Record
    entries: list[TimelineEntry]

    @classmethod
    def from_proto(cls, r: opb.PersonTimelineResponse) -> Timeline:
        """An orchestrator timeline as a model."""
        return cls(
            entity=Record.from_proto(r.entity),
            entries=[
                TimelineEntry(date=e.date, item=SearchHit.from_proto(e.item)) for e in r.entries
            ],
        )


class NoteSection(BaseModel):
    """One indexed chunk of the note: ``text[start:end]`` (offsets in code points)."""

    id: str = Field(description="The chunk id, as a citation's item_id names it.")
    ordinal: int
    heading: str = Field(description='Heading path inside the note, e.g. "Plans > Q3".')
    start: int
    end: int


class NoteVersion(BaseModel):
    """One version of a note, and when it held (docs/as-of.md)."""

    episode_id: str = Field(
        description='"NOTE_ID@vN" for an earlier version (the note route reads it); the note\'s '
        "own episode id for the current one."
    )
    number: int = Field(description="1 for the oldest version memex kept.")
    valid_from: str = Field(description="ISO 8601 UTC: the file's time when this was indexed.")
    valid_to: str = Field(
        description="ISO 8601 UTC: when the next version replaced it, or the note was found "
        'gone; "" for the current version.'
    )


class Note(BaseModel):
    """A whole note, as a citation links to it."""

    citation: str = Field(description='"[[Title]]".')
    episode_id: str
    title: str
    path: str = Field(description="Relative to the vault root.")
    date: str = Field(description="YYYY-MM-DD.")
    tags: list[str]
    sensitive: bool = Field(description="Shown only to a caller that asked and may see it.")
    text: str = Field(description="The note's body, without frontmatter.")
    sections: list[NoteSection]
    versions: list[NoteVersion] = Field(
        default_factory=list,
        description="Every version memex kept, oldest first, the current one last (docs/as-of.md).",
    )

    @classmethod
    def from_proto(cls, r: opb.GetNoteResponse) -> Note:
        """An orchestrator note as a model."""
        return cls(
            citation=r.citation or f"[[{r.title}]]",
            episode_id=r.episode_id,
            title=r.title,
            path=r.path,
            date=r.date,
            tags=list(r.tags),
            sensitive=r.sensitive,
            text=r.text,
            sections=[
                NoteSection(id=s.id, ordinal=s.ordinal, heading=s.heading, start=s.start, end=s.end)
                for s in r.sections
            ],
            versions=[
                NoteVersion(
                    episode_id=v.episode_id,
                    number=v.number,
                    valid_from=v.valid_from,
                    valid_to=v.valid_to,
                )
                for v in r.versions
            ],
        )


class ForgetCount(BaseModel):
    """What one store removed of one kind, and how many it still holds (0 when complete)."""

    store: str = Field(description='e.g. "retrieval (embedded)", "telemetry", "llm_log".')
    what: str = Field(description='e.g. "chunks", "vectors", "keyword index rows".')
    removed: int
    remaining: int


class ForgetCheck(BaseModel):
    """A lookup or search for the note, before and after the forget."""

    store: str
    description: str
    found_before: int
    found_after: int = Field(description="0 when nothing of the note is found any more.")


class ForgetReceipt(BaseModel):
    """The receipt of a note forget (docs/orchestrator.md, "Forgetting a note")."""

    episode_id: str
    title: str
    path: str
    counts: list[ForgetCount]
    checks: list[ForgetCheck]
    file_present: bool = Field(
        description="The file is still in the vault: delete it to forget it for good."
    )
    tombstoned: bool = Field(description="Re-indexing skips the file while it is unchanged.")
    dry_run: bool
    complete: bool = Field(
        description="Nothing remains anywhere. False after a forget: something remains, see "
        "counts and checks (a dry run is never complete)."
    )
    conversations_citing: list[str] = Field(
        description="Your conversations citing the note, left as they are."
    )
    threads_citing: list[str]
    scrubbed: bool = Field(
        description="Every store's files were scrubbed of the deleted bytes; false on Weaviate, "
        "which compacts them away in the background."
    )

    @classmethod
    def from_proto(cls, r: opb.ForgetNoteResponse) -> ForgetReceipt:
        return cls(
            episode_id=r.episode_id,
            title=r.title,
            path=r.path,
            counts=[
                ForgetCount(store=x.store, what=x.what, removed=x.removed, remaining=x.remaining)
                for x in r.counts
            ],
            checks=[
                ForgetCheck(
                    store=x.store,
                    description=x.description,
                    found_before=x.found_before,
                    found_after=x.found_after,
                )
                for x in r.checks
            ],
            file_present=r.file_present,
            tombstoned=r.tombstoned,
            dry_run=r.dry_run,
            complete=r.complete,
            conversations_citing=list(r.conversations_citing),
            threads_citing=list(r.threads_citing),
            scrubbed=r.scrubbed,
        )

"""The MCP tools' structured results, and their translation from the stack's protos.

Every result that rests on memory carries citations (``[[Note]]`` or ``collection:id``) so the
client can show where an answer came from.
"""

from __future__ import annotations

from typing import Any, Literal

from google.protobuf import json_format
from pydantic import BaseModel, Field

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2
from memex.retrieval.v1 import retrieval_pb2

ChannelName = Literal["vector", "keyword", "graph", "beliefs", "observations"]
SupportName = Literal["verbatim", "paraphrase", "inference", "unchecked"]
CHANNELS: dict[str, int] = {
    "vector": common_pb2.CHANNEL_VECTOR,
    "keyword": common_pb2.CHANNEL_KEYWORD,
    "graph": common_pb2.CHANNEL_GRAPH,
    "beliefs": common_pb2.CHANNEL_BELIEFS,
    "observations": common_pb2.CHANNEL_OBSERVATIONS,
}
_CHANNEL_NAMES = {v: k for k, v in CHANNELS.items()}
_SUPPORT: dict[int, tuple[SupportName, str]] = {
    common_pb2.SUPPORT_VERBATIM: ("verbatim", "verbatim"),
    common_pb2.SUPPORT_PARAPHRASE: ("paraphrase", "paraphrase"),
    common_pb2.SUPPORT_INFERENCE: ("inference", "reading between the lines"),
}
_KINDS = {
    retrieval_pb2.ITEM_KIND_CHUNK: "note",
    retrieval_pb2.ITEM_KIND_RECORD: "record",
    retrieval_pb2.ITEM_KIND_BELIEF: "belief",
    retrieval_pb2.ITEM_KIND_OBSERVATION: "observation",
}


class Citation(BaseModel):
    """A checked citation: always one of the items the answer was built from."""

    ref: str = Field(description='"[[Note Title]]" for notes, else "collection:id"')
    item_id: str = Field(description="the chunk or record the citation rests on")
    episode_id: str = Field(description="the note's id (empty for records)")
    quote: str = Field(description="the quote given, if any")
    support: SupportName = Field(description="how strongly the cited text supports the quote")
    support_label: str = Field(
        description='for people: "verbatim", "paraphrase" or "reading between the lines"'
    )

    @classmethod
    def from_proto(cls, c: common_pb2.Citation) -> Citation:
        """The proto citation with its support spelled out."""
        support, label = _SUPPORT.get(c.support, ("unchecked", "unchecked"))
        return cls(
            ref=c.ref,
            item_id=c.item_id,
            episode_id=c.episode_id,
            quote=c.quote,
            support=support,
            support_label=label,
        )


class AskResult(BaseModel):
    """A cited answer from memory."""

    answer: str
    citations: list[Citation]
    abstained: bool = Field(description="true when memory did not hold enough to answer")
    withheld: int = Field(description="sensitive items held back from a remote model")
    opinion: str = Field(description="an opinion offered, kept apart from the cited answer")
    persona: str
    model: str
    grounding_score: float = Field(description="share of the model's citations that held up")
    latency_ms: float

    @classmethod
    def from_proto(cls, r: orchestrator_pb2.AskResponse) -> AskResult:
        """The orchestrator's answer as a tool result."""
        return cls(
            answer=r.answer,
            citations=[Citation.from_proto(c) for c in r.citations],
            abstained=r.abstained,
            withheld=r.withheld,
            opinion=r.opinion,
            persona=r.persona,
            model=r.model,
            grounding_score=r.grounding.score,
            latency_ms=r.latency_ms,
        )


class SearchHit(BaseModel):
    """One retrieved item with its citation and where it came from."""

    citation: str = Field(description='cite it as this: "[[Note Title]]" or "collection:id"')
    id: str
    kind: Literal["note", "record", "belief", "observation", "unknown"]
    text: str
    title: str
    path: str
    heading: str
    date: str
    episode_id: str
    collection: str
    sensitive: bool
    score: float
    channels: list[str] = Field(description="the retrieval channels that found it")

    @classmethod
    def from_proto(cls, item: retrieval_pb2.RetrievedItem) -> SearchHit:
        """A retrieved item as a tool result."""
        p = item.provenance
        return cls(
            citation=item.citation,
            id=item.id,
            kind=_KINDS.get(item.kind, "unknown"),
            text=item.text,
            title=p.title,
            path=p.path,
            heading=p.heading,
            date=p.date,
            episode_id=p.episode_id,
            collection=item.collection,
            sensitive=item.sensitive,
            score=item.score,
            channels=[_CHANNEL_NAMES.get(c.channel, "?") for c in item.channel_scores],
        )


class SearchResult(BaseModel):
    """Search results, best first."""

    query: str
    hits: list[SearchHit]


class RecordOut(BaseModel):
    """A structured record (entity, event, inbox item, belief, ...) with its citation."""

    collection: str
    id: str
    citation: str
    sensitive: bool
    fields: dict[str, Any]

    @classmethod
    def from_proto(cls, r: retrieval_pb2.Record) -> RecordOut:
        """A record as a tool result."""
        return cls(
            collection=r.collection,
            id=r.id,
            citation=r.citation,
            sensitive=r.sensitive,
            fields=json_format.MessageToDict(r.fields),
        )


class RecordsResult(BaseModel):
    """Records matching a query."""

    collection: str
    records: list[RecordOut]


class TimelineEntry(BaseModel):
    """One dated item about the person."""

    date: str
    item: SearchHit


class TimelineResult(BaseModel):
    """Everything about one person (or other entity), in date order."""

    entity: RecordOut
    entries: list[TimelineEntry]


class InboxResult(BaseModel):
    """Inbox items, soonest first."""

    items: list[RecordOut]


class NoteSection(BaseModel):
    """Where one chunk of the note lies in its text: a citation's item_id is a chunk id."""

    id: str
    heading: str
    start: int
    end: int


class NoteResult(BaseModel):
    """A whole note, as a citation links to it."""

    citation: str = Field(description='"[[Title]]"')
    episode_id: str
    title: str
    path: str
    date: str
    tags: list[str]
    sensitive: bool
    text: str = Field(description="the note's body, without frontmatter")
    sections: list[NoteSection]

    @classmethod
    def from_proto(cls, r: retrieval_pb2.GetNoteResponse) -> NoteResult:
        """The retrieval service's note as a tool result."""
        return cls(
            citation=f"[[{r.title}]]",
            episode_id=r.episode_id,
            title=r.title,
            path=r.path,
            date=r.date,
            tags=list(r.tags),
            sensitive=r.sensitive,
            text=r.text,
            sections=[
                NoteSection(id=c.id, heading=c.heading, start=c.start, end=c.end) for c in r.chunks
            ],
        )

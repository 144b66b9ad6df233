"""Proto ⇄ domain translation of the memory reads (issue 11); no logic beyond the mapping."""

from __future__ import annotations

from collections.abc import Sequence

from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.orchestrator.memory import policy
from memex.orchestrator.memory.items import Note, Record, ShownItem, Timeline
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.channels import CHANNEL_NAMES, CHANNELS
from memex.shared.errors import InvalidArgument

KINDS = {
    "chunk": pb.ITEM_KIND_CHUNK,
    "record": pb.ITEM_KIND_RECORD,
    "belief": pb.ITEM_KIND_BELIEF,
    "observation": pb.ITEM_KIND_OBSERVATION,
}


def _struct(values: dict[str, object]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    json_format.ParseDict(values, out)
    return out


def item_pb(item: ShownItem) -> pb.MemoryItem:
    """A memory item on the wire, with every piece of provenance the orchestrator holds."""
    return pb.MemoryItem(
        id=item.item_id,
        kind=KINDS[item.kind],
        text=item.text,
        provenance=common_pb2.Provenance(
            episode_id=item.episode_id,
            date=item.date,
            title=item.title,
            path=item.path,
            heading=item.heading,
        ),
        citation=item.ref,
        sensitive=item.sensitive,
        collection=item.collection,
        tags=list(item.tags),
        channel_scores=[
            common_pb2.ChannelScore(
                channel=CHANNELS[name], rank=item.channel_ranks.get(name, 0), score=score
            )
            for name, score in item.channel_scores.items()
            if name in CHANNELS
        ],
        fused_score=item.fused_score,
        recency_factor=item.recency_factor,
        salience_factor=item.salience_factor,
        score=item.score,
        attributes=_struct(item.attributes),
        rerank_score=item.rerank_score,
    )


def record_pb(record: Record) -> pb.MemoryRecord:
    """A record on the wire."""
    return pb.MemoryRecord(
        collection=record.collection,
        id=record.id,
        fields=_struct(record.fields),
        citation=record.citation,
        sensitive=record.sensitive,
    )


def timeline_pb(timeline: Timeline) -> pb.PersonTimelineResponse:
    """A timeline on the wire."""
    return pb.PersonTimelineResponse(
        entity=record_pb(timeline.entity),
        entries=[pb.TimelineEntry(date=d, item=item_pb(i)) for d, i in timeline.entries],
    )


def note_pb(note: Note) -> pb.GetNoteResponse:
    """A note on the wire."""
    return pb.GetNoteResponse(
        episode_id=note.episode_id,
        title=note.title,
        path=note.path,
        date=note.date,
        tags=list(note.tags),
        sensitive=note.sensitive,
        text=note.text,
        sections=[
            pb.NoteSection(id=s.id, ordinal=s.ordinal, heading=s.heading, start=s.start, end=s.end)
            for s in note.sections
        ],
        citation=f"[[{note.title}]]",
        versions=[
            pb.NoteVersion(
                episode_id=v.episode_id,
                number=v.number,
                valid_from=v.valid_from,
                valid_to=v.valid_to,
            )
            for v in note.versions
        ],
    )


def scope(tenant: str, filters: pb.MemoryFilters) -> policy.Scope:
    """The read scope of a request's tenant (already defaulted) and filters."""
    return policy.scope(
        tenant,
        include_sensitive=filters.include_sensitive,
        since=filters.since,
        until=filters.until,
        tags=list(filters.tags),
        collections=list(filters.collections),
    )


def channel_names(channels: Sequence[int]) -> list[str]:
    """Channel enums as names; INVALID_ARGUMENT for an unknown one."""
    unknown = [c for c in channels if c not in CHANNEL_NAMES]
    if unknown:
        raise InvalidArgument(
            f"unknown channel {unknown[0]}: use vector, keyword, graph, beliefs or observations"
        )
    return [CHANNEL_NAMES[c] for c in channels]  # type: ignore[index]


def conditions(filters: Sequence[pb.RecordCondition]) -> list[tuple[str, str, object]]:
    """Record conditions as ``(field, op, value)`` with plain JSON values."""
    return [(f.field, f.op, json_format.MessageToDict(f.value)) for f in filters]

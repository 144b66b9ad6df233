"""Proto ⇄ domain conversions for the retrieval service (no logic)."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.retrieval.forget import ForgetReceipt
from memex.retrieval.ingest.indexer import IndexSummary
from memex.retrieval.items import Item
from memex.retrieval.records import ResolvedRecord
from memex.retrieval.search import Filters, Query
from memex.retrieval.store.base import Condition
from memex.retrieval.v1 import retrieval_pb2
from memex.shared.channels import CHANNEL_NAMES, CHANNELS
from memex.shared.errors import InvalidArgument

KINDS = {
    "chunk": retrieval_pb2.ITEM_KIND_CHUNK,
    "record": retrieval_pb2.ITEM_KIND_RECORD,
    "belief": retrieval_pb2.ITEM_KIND_BELIEF,
    "observation": retrieval_pb2.ITEM_KIND_OBSERVATION,
}


def struct(values: dict[str, Any]) -> struct_pb2.Struct:
    """A Struct from JSON-like values (non-JSON values become strings)."""
    out = struct_pb2.Struct()
    json_format.ParseDict(_jsonable(values), out)
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def query(request: retrieval_pb2.SearchRequest, tenant: str) -> Query:
    """The domain query of a SearchRequest."""
    channels = []
    for channel in request.channels:
        if channel not in CHANNEL_NAMES:
            raise InvalidArgument(
                f"unknown channel {channel}: use vector, keyword, graph, beliefs or observations"
            )
        channels.append(CHANNEL_NAMES[channel])
    f = request.filters
    return Query(
        tenant=tenant,
        text=request.query,
        channels=tuple(dict.fromkeys(channels)),
        filters=Filters(
            start=f.window.start,
            end=f.window.end,
            collections=tuple(f.collections),
            tags=tuple(f.tags),
            include_sensitive=f.include_sensitive,
            exclude_notes=f.exclude_notes,
            include_contested=f.include_contested,
        ),
        k=request.k,
        observation_weight=request.observation_weight,
        as_of=request.as_of,
    )


def item(value: Item) -> retrieval_pb2.RetrievedItem:
    """A RetrievedItem message."""
    return retrieval_pb2.RetrievedItem(
        id=value.id,
        kind=KINDS[value.kind],
        text=value.text,
        provenance=common_pb2.Provenance(
            episode_id=value.episode_id,
            date=value.date,
            title=value.title,
            path=value.path,
            heading=value.heading,
        ),
        citation=value.citation,
        sensitive=value.sensitive,
        collection=value.collection,
        channel_scores=[
            common_pb2.ChannelScore(
                channel=CHANNELS.get(c.channel, common_pb2.CHANNEL_UNSPECIFIED),
                rank=c.rank,
                score=c.score,
            )
            for c in value.channels
        ],
        fused_score=value.fused,
        recency_factor=value.recency,
        salience_factor=value.salience,
        score=value.score,
        attributes=struct(value.attributes),
        rerank_score=value.rerank,  # None leaves it unset: no reranker ran
    )


def record(value: ResolvedRecord) -> retrieval_pb2.Record:
    """A Record message."""
    r = value.record
    return retrieval_pb2.Record(
        collection=r.collection,
        id=r.id,
        fields=struct(dict(r.fields)),
        citation=value.citation,
        sensitive=r.sensitive,
    )


def conditions(filters: Any) -> list[Condition]:
    """FieldFilter messages as conditions (validated later)."""
    out = []
    for f in filters:
        value = json_format.MessageToDict(f.value) if f.HasField("value") else None
        out.append(Condition(field=f.field, op=f.op, value=value))
    return out


def summary(value: IndexSummary) -> retrieval_pb2.IndexSummary:
    """An IndexSummary message."""
    return retrieval_pb2.IndexSummary(
        added=value.added,
        updated=value.updated,
        removed=value.removed,
        unchanged=value.unchanged,
        skipped=[retrieval_pb2.SkippedFile(path=p, reason=r) for p, r in value.skipped],
        warnings=value.warnings,
        chunks_embedded=value.chunks_embedded,
        records_upserted=value.records_upserted,
        seconds=value.seconds,
        records_removed=value.records_removed,
        embed_seconds=value.embed_seconds,
    )


def forget_receipt(value: ForgetReceipt) -> retrieval_pb2.DeleteNoteResponse:
    """A forget's receipt on the wire."""
    return retrieval_pb2.DeleteNoteResponse(
        episode_id=value.note.id,
        title=value.note.title,
        path=value.note.path,
        chunk_ids=value.chunk_ids,
        text=value.text,
        counts=[
            retrieval_pb2.ForgetCount(
                store=c.store, what=c.what, removed=c.removed, remaining=c.remaining
            )
            for c in value.counts
        ],
        checks=[
            retrieval_pb2.ForgetCheck(
                store=c.store,
                description=c.description,
                found_before=c.found_before,
                found_after=c.found_after,
            )
            for c in value.checks
        ],
        file_present=value.file_present,
        tombstoned=value.tombstoned,
        dry_run=value.dry_run,
        scrubbed=value.scrubbed,
    )

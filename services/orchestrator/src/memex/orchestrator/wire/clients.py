"""The retrieval and reasoner stages over gRPC, as the orchestrator's ports."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import grpc
from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.orchestrator.memory import as_of
from memex.orchestrator.memory.items import (
    Note,
    NoteSection,
    NoteVersion,
    Record,
    ShownItem,
    Timeline,
    record_item,
)
from memex.orchestrator.ports import (
    ChatMessage,
    ForgetCheck,
    ForgetCount,
    ForgottenNote,
    GenerateOptions,
    NoteFileHead,
    NoteSummary,
    ReasonerInfo,
    SearchSpec,
    Usage,
)
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.channels import CHANNEL_NAMES, CHANNELS
from memex.shared.client import open_channel
from memex.shared.errors import NotFound
from memex.shared.grpc_errors import error_from_rpc

KINDS = {
    retrieval_pb2.ITEM_KIND_CHUNK: "chunk",
    retrieval_pb2.ITEM_KIND_RECORD: "record",
    retrieval_pb2.ITEM_KIND_BELIEF: "belief",
    retrieval_pb2.ITEM_KIND_OBSERVATION: "observation",
}
ROLES = {
    "system": reasoner_pb2.ROLE_SYSTEM,
    "user": reasoner_pb2.ROLE_USER,
    "assistant": reasoner_pb2.ROLE_ASSISTANT,
}


def shown_item(item: retrieval_pb2.RetrievedItem) -> ShownItem:
    """A retrieved item as the orchestrator holds it, with all of its provenance."""
    p = item.provenance
    attributes = json_format.MessageToDict(item.attributes)
    raw_tags = attributes.get("tags")
    tags = raw_tags if isinstance(raw_tags, list) else []
    return ShownItem(
        item_id=item.id,
        text=item.text,
        ref=item.citation or item.id,
        episode_id=p.episode_id,
        title=p.title,
        date=p.date,
        kind=KINDS.get(item.kind, "chunk"),  # type: ignore[arg-type]
        sensitive=item.sensitive,
        score=item.score,
        channel_scores={
            CHANNEL_NAMES.get(s.channel, "other"): s.score for s in item.channel_scores
        },
        path=p.path,
        heading=p.heading,
        collection=item.collection,
        tags=tuple(str(t).lstrip("#").casefold() for t in tags),
        channel_ranks={CHANNEL_NAMES.get(s.channel, "other"): s.rank for s in item.channel_scores},
        fused_score=item.fused_score,
        recency_factor=item.recency_factor,
        salience_factor=item.salience_factor,
        attributes=attributes,
        rerank_score=item.rerank_score if item.HasField("rerank_score") else None,
    )


def record(r: retrieval_pb2.Record) -> Record:
    """A record from the wire."""
    return Record(
        collection=r.collection,
        id=r.id,
        fields=json_format.MessageToDict(r.fields),
        citation=r.citation or f"{r.collection}:{r.id}",
        sensitive=r.sensitive,
    )


def _note(r: retrieval_pb2.GetNoteResponse) -> Note:
    return Note(
        episode_id=r.episode_id,
        title=r.title,
        path=r.path,
        date=r.date,
        tags=tuple(r.tags),
        sensitive=r.sensitive,
        text=r.text,
        sections=tuple(
            NoteSection(id=c.id, ordinal=c.ordinal, heading=c.heading, start=c.start, end=c.end)
            for c in r.chunks
        ),
        versions=tuple(
            NoteVersion(v.episode_id, v.number, v.valid_from, v.valid_to) for v in r.versions
        ),
    )


class GrpcMemory:
    """The Memory port over the retrieval service."""

    def __init__(self, address: str) -> None:
        self._channel = open_channel(
            address,
            service="memex.retrieval.v1.RetrievalService",
            idempotent_methods=[
                "Search",
                "QueryRecords",
                "PersonTimeline",
                "ListInbox",
                "GetNote",
                "ListNotes",
                "UpsertRecords",
                "DeleteRecords",
            ],
        )
        self._stub = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)

    async def close(self) -> None:
        """Closes the channel."""
        await self._channel.close()

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc

    async def search(self, tenant: str, spec: SearchSpec) -> list[ShownItem]:
        window = common_pb2.TimeWindow(start=spec.since, end=spec.until)
        if spec.window_days and not spec.since:
            window.start = (as_of.today() - dt.timedelta(days=spec.window_days)).isoformat()
        request = retrieval_pb2.SearchRequest(
            tenant=tenant,
            query=spec.query,
            channels=[CHANNELS[c] for c in spec.channels if c in CHANNELS],
            k=spec.k,
            observation_weight=spec.observation_weight,
            as_of=as_of.wire(),
            filters=retrieval_pb2.SearchFilters(
                window=window,
                tags=list(spec.tags),
                include_sensitive=spec.include_sensitive,
                include_contested=spec.include_contested,
                collections=list(spec.collections),
            ),
        )
        reply = await self._call(self._stub.Search, request)
        return [shown_item(item) for item in reply.items]

    async def records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[Record]:
        conditions = []
        for field, op, value in filters:
            wrapped = struct_pb2.Value()
            json_format.ParseDict(value, wrapped)  # type: ignore[arg-type]  # Value takes any JSON
            conditions.append(retrieval_pb2.FieldFilter(field=field, op=op, value=wrapped))
        request = retrieval_pb2.QueryRecordsRequest(
            tenant=tenant,
            collection=collection,
            filter=conditions,
            sort=sort,
            limit=limit,
            as_of=as_of.wire(),
        )
        reply = await self._call(self._stub.QueryRecords, request)
        return [record(r) for r in reply.records]

    async def timeline(self, tenant: str, entity_id: str, limit: int) -> Timeline:
        request = retrieval_pb2.PersonTimelineRequest(
            tenant=tenant, entity_id=entity_id, limit=limit, as_of=as_of.wire()
        )
        reply = await self._call(self._stub.PersonTimeline, request)
        return Timeline(
            entity=record(reply.entity),
            entries=tuple((e.date, shown_item(e.item)) for e in reply.entries),
        )

    async def inbox(self, tenant: str, limit: int, include_done: bool) -> list[Record]:
        request = retrieval_pb2.ListInboxRequest(
            tenant=tenant, limit=limit, include_done=include_done, as_of=as_of.wire()
        )
        reply = await self._call(self._stub.ListInbox, request)
        return [record(r) for r in reply.items]

    async def note(self, tenant: str, episode_id: str) -> Note:
        request = retrieval_pb2.GetNoteRequest(tenant=tenant, episode_id=episode_id)
        return _note(await self._call(self._stub.GetNote, request))

    async def note_file(
        self, tenant: str, episode_id: str
    ) -> AsyncGenerator[NoteFileHead | bytes, None]:
        request = retrieval_pb2.ReadNoteFileRequest(tenant=tenant, episode_id=episode_id)
        try:
            first = True
            async for reply in self._stub.ReadNoteFile(request):
                if first:
                    yield NoteFileHead(reply.content_type, reply.size, reply.name)
                    first = False
                elif reply.data:
                    yield reply.data
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc

    # What the learning loop reads and writes (issue 37, ``learning/reflect.py``).

    async def list_notes(
        self, tenant: str, since: str, until: str, limit: int
    ) -> list[NoteSummary]:
        request = retrieval_pb2.ListNotesRequest(
            tenant=tenant, since=since, until=until, limit=limit
        )
        reply = await self._call(self._stub.ListNotes, request)
        return [
            NoteSummary(n.episode_id, n.title, n.path, n.date, tuple(n.tags), n.sensitive)
            for n in reply.notes
        ]

    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        wire = []
        for r in records:
            fields = struct_pb2.Struct()
            fields.update(r.fields)
            wire.append(
                retrieval_pb2.Record(
                    collection=r.collection, id=r.id, fields=fields, sensitive=r.sensitive
                )
            )
        request = retrieval_pb2.UpsertRecordsRequest(tenant=tenant, records=wire)
        return int((await self._call(self._stub.UpsertRecords, request)).upserted)

    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        request = retrieval_pb2.DeleteRecordsRequest(
            tenant=tenant, collection=collection, ids=list(ids)
        )
        return int((await self._call(self._stub.DeleteRecords, request)).deleted)

    # The plan hop's tools (SPEC B1): the same reads, as items to brief the model with.

    async def query_records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[ShownItem]:
        found = await self.records(tenant, collection, filters, sort, limit)
        return [record_item(r) for r in found]

    async def person_timeline(self, tenant: str, entity_id: str, limit: int) -> list[ShownItem]:
        try:
            timeline = await self.timeline(tenant, entity_id, limit)
        except NotFound:
            return []  # the planner guessed an id that does not exist: nothing to add
        return [record_item(timeline.entity)] + [item for _, item in timeline.entries]

    async def list_inbox(self, tenant: str, limit: int) -> list[ShownItem]:
        return [record_item(r) for r in await self.inbox(tenant, limit, False)]

    async def forget_note(self, tenant: str, note: str, dry_run: bool) -> ForgottenNote:
        """The NoteEraser port: retrieval's DeleteNote, its receipt as domain values."""
        try:
            reply = await self._stub.DeleteNote(
                retrieval_pb2.DeleteNoteRequest(tenant=tenant, note=note, dry_run=dry_run)
            )
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        return ForgottenNote(
            episode_id=reply.episode_id,
            title=reply.title,
            path=reply.path,
            chunk_ids=tuple(reply.chunk_ids),
            text=reply.text,
            counts=tuple(
                ForgetCount(c.store, c.what, c.removed, c.remaining) for c in reply.counts
            ),
            checks=tuple(
                ForgetCheck(c.store, c.description, c.found_before, c.found_after)
                for c in reply.checks
            ),
            file_present=reply.file_present,
            tombstoned=reply.tombstoned,
            scrubbed=reply.scrubbed,
        )


class GrpcReasoner:
    """The Reasoner port over the reasoner service."""

    def __init__(self, address: str, timeout: float = 300.0) -> None:
        self._channel = open_channel(
            address,
            service="memex.reasoner.v1.ReasonerService",
            idempotent_methods=["Info"],
            default_timeout=timeout,
        )
        self._stub = reasoner_pb2_grpc.ReasonerServiceStub(self._channel)

    async def close(self) -> None:
        """Closes the channel."""
        await self._channel.close()

    async def info(self) -> ReasonerInfo:
        try:
            reply = await self._stub.Info(reasoner_pb2.InfoRequest(), timeout=10)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        return ReasonerInfo(
            reply.engine,
            reply.model,
            reply.context_length,
            reply.local,
            reply.prefill_tokens_per_second,
        )

    async def generate(
        self, messages: Sequence[ChatMessage], options: GenerateOptions, usage: list[Usage]
    ) -> AsyncGenerator[str, None]:
        sampling = reasoner_pb2.Sampling(max_tokens=options.max_tokens, stop=list(options.stop))
        if options.temperature is not None:
            sampling.temperature = options.temperature
        request = reasoner_pb2.GenerateRequest(
            messages=[
                reasoner_pb2.Message(role=ROLES[m.role], content=m.content) for m in messages
            ],
            sampling=sampling,
            json_schema=options.json_schema,
        )
        call = self._stub.Generate(request)
        try:
            async for reply in call:
                if reply.HasField("final"):
                    final = reply.final
                    usage.append(Usage(final.usage.prompt_tokens, final.usage.completion_tokens))
                elif reply.delta:
                    yield reply.delta
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        finally:
            call.cancel()  # a no-op when finished; stops generation when our caller went away

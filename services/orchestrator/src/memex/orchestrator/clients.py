"""The retrieval and reasoner stages over gRPC, as the orchestrator's ports."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator, Sequence

import grpc
from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.orchestrator.items import ShownItem
from memex.orchestrator.ports import (
    ChatMessage,
    ForgetCheck,
    ForgetCount,
    ForgottenNote,
    GenerateOptions,
    ReasonerInfo,
    SearchSpec,
    Usage,
)
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.grpc_errors import error_from_rpc

CHANNELS = {
    "vector": common_pb2.CHANNEL_VECTOR,
    "keyword": common_pb2.CHANNEL_KEYWORD,
    "graph": common_pb2.CHANNEL_GRAPH,
    "beliefs": common_pb2.CHANNEL_BELIEFS,
    "observations": common_pb2.CHANNEL_OBSERVATIONS,
}
CHANNEL_NAMES = {value: name for name, value in CHANNELS.items()}
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
    """A retrieved item as the orchestrator briefs it."""
    return ShownItem(
        item_id=item.id,
        text=item.text,
        ref=item.citation or item.id,
        episode_id=item.provenance.episode_id,
        title=item.provenance.title,
        date=item.provenance.date,
        kind=KINDS.get(item.kind, "chunk"),  # type: ignore[arg-type]
        sensitive=item.sensitive,
        score=item.score,
        channel_scores={
            CHANNEL_NAMES.get(s.channel, "other"): s.score for s in item.channel_scores
        },
    )


def record_item(record: retrieval_pb2.Record) -> ShownItem:
    """A structured record, rendered as "field: value" lines."""
    fields = json_format.MessageToDict(record.fields)
    title = str(fields.get("name") or fields.get("title") or "")
    lines = [
        f"{key}: {value}"
        for key, value in fields.items()
        if key != "id" and value not in ("", None, [])
    ]
    kind = {"beliefs": "belief", "observations": "observation"}.get(record.collection, "record")
    return ShownItem(
        item_id=f"{record.collection}:{record.id}",
        text="\n".join(lines),
        ref=record.citation or f"{record.collection}:{record.id}",
        title=title,
        date=str(fields.get("date") or fields.get("observed_at") or ""),
        kind=kind,  # type: ignore[arg-type]
        sensitive=record.sensitive,
    )


class GrpcMemory:
    """The Memory port over the retrieval service."""

    def __init__(self, address: str) -> None:
        self._channel = open_channel(
            address,
            service="memex.retrieval.v1.RetrievalService",
            idempotent_methods=["Search", "QueryRecords", "PersonTimeline", "ListInbox"],
        )
        self._stub = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)

    async def close(self) -> None:
        """Closes the channel."""
        await self._channel.close()

    async def search(self, tenant: str, spec: SearchSpec) -> list[ShownItem]:
        window = common_pb2.TimeWindow()
        if spec.window_days:
            window.start = (dt.date.today() - dt.timedelta(days=spec.window_days)).isoformat()
        request = retrieval_pb2.SearchRequest(
            tenant=tenant,
            query=spec.query,
            channels=[CHANNELS[c] for c in spec.channels if c in CHANNELS],
            k=spec.k,
            observation_weight=spec.observation_weight,
            filters=retrieval_pb2.SearchFilters(
                window=window,
                include_sensitive=spec.include_sensitive,
                include_contested=spec.include_contested,
                collections=list(spec.collections),
            ),
        )
        try:
            reply = await self._stub.Search(request)
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        return [shown_item(item) for item in reply.items]

    async def query_records(
        self,
        tenant: str,
        collection: str,
        filters: Sequence[tuple[str, str, object]],
        sort: str,
        limit: int,
    ) -> list[ShownItem]:
        conditions = []
        for field, op, value in filters:
            wrapped = struct_pb2.Value()
            json_format.ParseDict(value, wrapped)  # type: ignore[arg-type]  # Value takes any JSON
            conditions.append(retrieval_pb2.FieldFilter(field=field, op=op, value=wrapped))
        try:
            reply = await self._stub.QueryRecords(
                retrieval_pb2.QueryRecordsRequest(
                    tenant=tenant, collection=collection, filter=conditions, sort=sort, limit=limit
                )
            )
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        return [record_item(r) for r in reply.records]

    async def person_timeline(self, tenant: str, entity_id: str, limit: int) -> list[ShownItem]:
        try:
            reply = await self._stub.PersonTimeline(
                retrieval_pb2.PersonTimelineRequest(tenant=tenant, entity_id=entity_id, limit=limit)
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                return []  # the planner guessed an id that does not exist: nothing to add
            raise error_from_rpc(exc) from exc
        items = [record_item(reply.entity)] if reply.HasField("entity") else []
        return items + [shown_item(entry.item) for entry in reply.entries]

    async def list_inbox(self, tenant: str, limit: int) -> list[ShownItem]:
        try:
            reply = await self._stub.ListInbox(
                retrieval_pb2.ListInboxRequest(tenant=tenant, limit=limit)
            )
        except grpc.aio.AioRpcError as exc:
            raise error_from_rpc(exc) from exc
        return [record_item(r) for r in reply.items]

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

"""The MCP tools: typed inputs (the JSON schema a client sees) and cited, structured results."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from google.protobuf import struct_pb2
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, JsonValue

from memex.common.v1 import common_pb2
from memex.gateway.entities import resolve_entity
from memex.gateway.mcp.backend import Stack
from memex.gateway.mcp.models import (
    CHANNELS,
    AskResult,
    ChannelName,
    InboxResult,
    NoteResult,
    RecordOut,
    RecordsResult,
    SearchHit,
    SearchResult,
    TimelineEntry,
    TimelineResult,
)
from memex.orchestrator.v1 import orchestrator_pb2
from memex.retrieval.v1 import retrieval_pb2
from memex.shared.errors import MemexError, NotFound

Date = Annotated[str, Field(pattern=r"^(\d{4}-\d{2}-\d{2})?$", description="YYYY-MM-DD")]


class RecordFilter(BaseModel):
    """One condition, ``field op value``: {"field": "date", "op": "gte", "value": "2026-01-01"}."""

    field: str = Field(
        min_length=1, description='"id", "date" or a dotted path into the fields, e.g. "kind"'
    )
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte", "contains", "in"]
    value: JsonValue


def _value(value: Any) -> struct_pb2.Value:
    out = struct_pb2.Value()
    if value is None:
        out.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int | float):
        out.number_value = float(value)
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, list):
        out.list_value.values.extend(_value(v) for v in value)
    else:
        out.struct_value.update(value)
    return out


class Tools:
    """The tool functions, bound to one stack."""

    def __init__(self, stack: Stack, progress_every_s: float = 5.0) -> None:
        self.stack = stack
        self.progress_every_s = progress_every_s

    async def ask(
        self,
        ctx: Context,
        question: Annotated[str, Field(min_length=1, max_length=4000)],
        persona: Annotated[
            str, Field(description="analyst (default), coach, friend, skeptic, ...")
        ] = "",
        limit: Annotated[
            int, Field(ge=0, le=50, description="items the answer may draw on; 0 = default (8)")
        ] = 0,
    ) -> AskResult:
        """Answer a question from the user's personal memory (notes, records, beliefs), with
        citations. Each citation says how the source supports the claim: verbatim, paraphrase, or
        inference ("reading between the lines"). `abstained` is true when memory holds no answer."""
        request = orchestrator_pb2.AskRequest(question=question, persona=persona, limit=limit)
        call = asyncio.ensure_future(self.stack.orchestrator(lambda stub: stub.Ask(request)))
        # An ask on a local CPU model takes a while: progress keeps a client that asked for it
        # informed (and, for many clients, keeps its request timeout from firing).
        start = time.monotonic()
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=self.progress_every_s)
                if done:
                    break
                elapsed = time.monotonic() - start
                await ctx.report_progress(elapsed, message=f"thinking ({elapsed:.0f}s)")
        finally:
            call.cancel()  # a no-op once done; stops the RPC if the client cancelled
        return AskResult.from_proto(call.result())

    async def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        k: Annotated[int, Field(ge=0, le=100, description="results; 0 = default (10)")] = 0,
        channels: Annotated[
            list[ChannelName], Field(description="empty = vector, keyword and graph")
        ] = [],  # noqa: B006 - the SDK reads the default into the schema; never mutated
        since: Date = "",
        until: Date = "",
        tags: Annotated[list[str], Field(description="only items with all these tags")] = [],  # noqa: B006
        include_sensitive: bool = False,
    ) -> SearchResult:
        """Hybrid search (semantic, keyword and entity graph) over the user's memory. Each hit
        carries the citation to use for it, its note title/path/date and the text found."""
        request = orchestrator_pb2.SearchRequest(
            search=retrieval_pb2.SearchRequest(
                query=query,
                k=k,
                channels=[CHANNELS[c] for c in channels],  # type: ignore[misc]
                filters=retrieval_pb2.SearchFilters(
                    window=common_pb2.TimeWindow(start=since, end=until),
                    tags=tags,
                    include_sensitive=include_sensitive,
                ),
            )
        )
        reply = await self.stack.orchestrator(lambda stub: stub.Search(request))
        return SearchResult(query=query, hits=[SearchHit.from_proto(i) for i in reply.items])

    async def query_records(
        self,
        collection: Annotated[
            str, Field(min_length=1, description="entities, events, inbox, beliefs, ...")
        ],
        filters: Annotated[list[RecordFilter], Field(description="all must hold")] = [],  # noqa: B006
        sort: Annotated[str, Field(description='a field; "-date" sorts descending')] = "",
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = default (50)")] = 0,
    ) -> RecordsResult:
        """Structured read of one record collection with field filters, e.g. events in a date
        range or entities of kind person. Each record carries its citation."""
        request = retrieval_pb2.QueryRecordsRequest(
            collection=collection,
            filter=[
                retrieval_pb2.FieldFilter(field=f.field, op=f.op, value=_value(f.value))
                for f in filters
            ],
            sort=sort,
            limit=limit,
        )
        reply = await self.stack.retrieval(lambda stub: stub.QueryRecords(request))
        return RecordsResult(
            collection=collection, records=[RecordOut.from_proto(r) for r in reply.records]
        )

    async def person_timeline(
        self,
        person: Annotated[
            str, Field(min_length=1, description='entity id ("graham-pearce") or name ("Graham")')
        ],
        limit: Annotated[int, Field(ge=0, le=500, description="0 = every entry")] = 0,
    ) -> TimelineResult:
        """Everything memory holds about one person (or place, project, ...) in date order:
        the entity record and the dated notes and records that mention it, each cited."""
        entity_id = await self._resolve_entity(person)
        request = retrieval_pb2.PersonTimelineRequest(entity_id=entity_id, limit=limit)
        reply = await self.stack.retrieval(lambda stub: stub.PersonTimeline(request))
        return TimelineResult(
            entity=RecordOut.from_proto(reply.entity),
            entries=[
                TimelineEntry(date=e.date, item=SearchHit.from_proto(e.item)) for e in reply.entries
            ],
        )

    async def list_inbox(
        self,
        limit: Annotated[int, Field(ge=0, le=1000, description="0 = default")] = 0,
        include_done: bool = False,
    ) -> InboxResult:
        """Open inbox items (tasks, follow-ups), soonest date first, each with its citation."""
        request = retrieval_pb2.ListInboxRequest(limit=limit, include_done=include_done)
        reply = await self.stack.retrieval(lambda stub: stub.ListInbox(request))
        return InboxResult(items=[RecordOut.from_proto(r) for r in reply.items])

    async def get_note(
        self,
        episode_id: Annotated[
            str, Field(min_length=1, description="a citation's or a search hit's episode_id")
        ],
    ) -> NoteResult:
        """The whole note a citation points to: title, path, date, tags and its text, to read
        the cited passage in context."""
        request = retrieval_pb2.GetNoteRequest(episode_id=episode_id)
        reply = await self.stack.retrieval(lambda stub: stub.GetNote(request))
        return NoteResult.from_proto(reply)

    async def _resolve_entity(self, person: str) -> str:
        """The entity id for an id, a name or an alias; a tool error when none or many match."""
        try:
            return await self.stack.retrieval(lambda stub: resolve_entity(stub, person))
        except MemexError as exc:
            hint = "; query_records on the entities collection lists them"
            raise ToolError(f"{exc}{hint if isinstance(exc, NotFound) else ''}") from None

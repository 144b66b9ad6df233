"""Proto ⇄ domain translation for the surfaces' reads of memory, each under the read policy
(issue 11): Search, QueryRecords, PersonTimeline, ListInbox, GetNote and ReadNoteFile.
``OrchestratorServicer`` takes them from this mixin."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from memex.orchestrator.service import Orchestrator
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.wire.reads_pb import (
    channel_names,
    conditions,
    item_pb,
    note_pb,
    record_pb,
    scope,
    timeline_pb,
)
from memex.shared.server import EngineSlot

Context = grpc.aio.ServicerContext[Any, Any]


class ReadsServicer:
    """The read RPCs of memex.orchestrator.v1.OrchestratorService."""

    _slot: EngineSlot[Orchestrator]

    async def Search(self, request: pb.SearchRequest, context: Context) -> pb.SearchResponse:
        o = self._slot.get()
        items, turn_id = await o.reads.search(
            scope(o.tenant(request.tenant), request.filters),
            request.query,
            persona_name=request.persona,
            channels=channel_names(request.channels),
            k=request.k,
            include_contested=request.filters.include_contested,
            as_of=request.filters.as_of,
        )
        return pb.SearchResponse(items=[item_pb(i) for i in items], turn_id=turn_id)

    async def QueryRecords(
        self, request: pb.QueryRecordsRequest, context: Context
    ) -> pb.QueryRecordsResponse:
        o = self._slot.get()
        records = await o.reads.records(
            scope(o.tenant(request.tenant), request.filters),
            request.collection,
            conditions(request.filter),
            request.sort,
            request.limit,
            as_of=request.filters.as_of,
        )
        return pb.QueryRecordsResponse(records=[record_pb(r) for r in records])

    async def PersonTimeline(
        self, request: pb.PersonTimelineRequest, context: Context
    ) -> pb.PersonTimelineResponse:
        o = self._slot.get()
        timeline = await o.reads.timeline(
            scope(o.tenant(request.tenant), request.filters),
            request.person,
            request.limit,
            as_of=request.filters.as_of,
        )
        return timeline_pb(timeline)

    async def ListInbox(
        self, request: pb.ListInboxRequest, context: Context
    ) -> pb.ListInboxResponse:
        o = self._slot.get()
        filters = pb.MemoryFilters(include_sensitive=request.include_sensitive)
        items = await o.reads.inbox(
            scope(o.tenant(request.tenant), filters),
            request.limit,
            request.include_done,
            as_of=request.as_of,
        )
        return pb.ListInboxResponse(items=[record_pb(r) for r in items])

    async def GetNote(self, request: pb.GetNoteRequest, context: Context) -> pb.GetNoteResponse:
        o = self._slot.get()
        filters = pb.MemoryFilters(include_sensitive=request.include_sensitive)
        note = await o.reads.note(scope(o.tenant(request.tenant), filters), request.episode_id)
        return note_pb(note)

    async def ReadNoteFile(
        self, request: pb.ReadNoteFileRequest, context: Context
    ) -> AsyncIterator[pb.ReadNoteFileResponse]:
        o = self._slot.get()
        filters = pb.MemoryFilters(include_sensitive=request.include_sensitive)
        asked = scope(o.tenant(request.tenant), filters)
        async for piece in o.reads.note_file(asked, request.episode_id):
            if isinstance(piece, bytes):
                yield pb.ReadNoteFileResponse(data=piece)
            else:
                yield pb.ReadNoteFileResponse(
                    content_type=piece.content_type, size=piece.size, name=piece.name
                )

"""Proto ⇄ domain translation for the retrieval service."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf import json_format

from memex.retrieval import convert
from memex.retrieval.core import RetrievalCore
from memex.retrieval.note_file import note_file, pieces
from memex.retrieval.note_text import get_note, list_notes
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.server import EngineSlot

Context = grpc.aio.ServicerContext[Any, Any]
PROGRESS_EVERY_S = 0.2


class RetrievalServicer(retrieval_pb2_grpc.RetrievalServiceServicer):
    """Implements memex.retrieval.v1.RetrievalService over a RetrievalCore."""

    def __init__(self, slot: EngineSlot[RetrievalCore]) -> None:
        self._slot = slot

    async def IndexVault(
        self, request: retrieval_pb2.IndexVaultRequest, context: Context
    ) -> AsyncIterator[retrieval_pb2.IndexVaultResponse]:
        core = self._slot.get()
        tenant = core.tenant(request.tenant)
        updates: asyncio.Queue[tuple[int, int, str]] = asyncio.Queue()
        run = asyncio.create_task(
            core.index(tenant, request.vault_path, request.full, lambda *p: updates.put_nowait(p))
        )
        last: tuple[int, int, str] | None = None
        try:
            while not run.done():
                getter = asyncio.ensure_future(updates.get())
                await asyncio.wait(
                    {getter, run}, timeout=PROGRESS_EVERY_S, return_when=asyncio.FIRST_COMPLETED
                )
                if not getter.done():
                    getter.cancel()
                    continue
                last = getter.result()
                while not updates.empty():  # send only the latest, at most every 0.2 s
                    last = updates.get_nowait()
                done, total, path = last
                yield retrieval_pb2.IndexVaultResponse(done=done, total=total, current_path=path)
                await asyncio.sleep(PROGRESS_EVERY_S)
            result = run.result()
        finally:
            if not run.done():  # the client went away: stop; the next run resumes
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run
        total = result.added + result.updated + result.unchanged
        yield retrieval_pb2.IndexVaultResponse(
            done=total, total=total, summary=convert.summary(result)
        )

    async def Search(
        self, request: retrieval_pb2.SearchRequest, context: Context
    ) -> retrieval_pb2.SearchResponse:
        core = self._slot.get()
        result = await core.searcher.search(convert.query(request, core.tenant(request.tenant)))
        return retrieval_pb2.SearchResponse(
            items=[convert.item(i) for i in result.items],
            embed_ms=result.embed_ms,
            search_ms=result.search_ms,
        )

    async def QueryRecords(
        self, request: retrieval_pb2.QueryRecordsRequest, context: Context
    ) -> retrieval_pb2.QueryRecordsResponse:
        core = self._slot.get()
        rows = await core.records.query(
            core.tenant(request.tenant),
            request.collection,
            convert.conditions(request.filter),
            request.sort,
            request.limit,
            request.as_of,
        )
        return retrieval_pb2.QueryRecordsResponse(records=[convert.record(r) for r in rows])

    async def PersonTimeline(
        self, request: retrieval_pb2.PersonTimelineRequest, context: Context
    ) -> retrieval_pb2.PersonTimelineResponse:
        core = self._slot.get()
        timeline = await core.records.timeline(
            core.tenant(request.tenant), request.entity_id, request.limit, request.as_of
        )
        return retrieval_pb2.PersonTimelineResponse(
            entity=convert.record(timeline.entity),
            entries=[
                retrieval_pb2.TimelineEntry(date=date, item=convert.item(i))
                for date, i in timeline.entries
            ],
        )

    async def ListInbox(
        self, request: retrieval_pb2.ListInboxRequest, context: Context
    ) -> retrieval_pb2.ListInboxResponse:
        core = self._slot.get()
        rows = await core.records.inbox(
            core.tenant(request.tenant), request.limit, request.include_done, request.as_of
        )
        return retrieval_pb2.ListInboxResponse(items=[convert.record(r) for r in rows])

    async def UpsertRecords(
        self, request: retrieval_pb2.UpsertRecordsRequest, context: Context
    ) -> retrieval_pb2.UpsertRecordsResponse:
        core = self._slot.get()
        raw = []
        for r in request.records:
            fields = json_format.MessageToDict(r.fields)
            if r.id:
                fields["id"] = r.id
            raw.append((r.collection, fields, r.sensitive))
        written = await core.records.upsert(core.tenant(request.tenant), raw)
        return retrieval_pb2.UpsertRecordsResponse(upserted=written)

    async def DeleteRecords(
        self, request: retrieval_pb2.DeleteRecordsRequest, context: Context
    ) -> retrieval_pb2.DeleteRecordsResponse:
        core = self._slot.get()
        deleted = await core.records.delete(
            core.tenant(request.tenant), request.collection, list(request.ids)
        )
        return retrieval_pb2.DeleteRecordsResponse(deleted=deleted)

    async def GetNote(
        self, request: retrieval_pb2.GetNoteRequest, context: Context
    ) -> retrieval_pb2.GetNoteResponse:
        core = self._slot.get()
        note = await get_note(core.store, core.tenant(request.tenant), request.episode_id)
        meta = note.meta
        return retrieval_pb2.GetNoteResponse(
            episode_id=meta.id,
            title=meta.title,
            path=meta.path,
            date=meta.date,
            tags=list(meta.tags),
            sensitive=meta.sensitive,
            text=note.text,
            chunks=[
                retrieval_pb2.NoteChunk(
                    id=c.id, ordinal=c.ordinal, heading=c.heading, start=c.start, end=c.end
                )
                for c in note.chunks
            ],
            versions=[
                retrieval_pb2.NoteVersion(
                    episode_id=v.of if v.current else v.id,
                    number=v.number,
                    valid_from=v.valid_from,
                    valid_to=v.valid_to or "",
                )
                for v in note.versions
            ],
        )

    async def DeleteNote(
        self, request: retrieval_pb2.DeleteNoteRequest, context: Context
    ) -> retrieval_pb2.DeleteNoteResponse:
        core = self._slot.get()
        receipt = await core.forget_note(core.tenant(request.tenant), request.note, request.dry_run)
        return convert.forget_receipt(receipt)

    async def ReadNoteFile(
        self, request: retrieval_pb2.ReadNoteFileRequest, context: Context
    ) -> AsyncIterator[retrieval_pb2.ReadNoteFileResponse]:
        core = self._slot.get()
        file = await note_file(core.store, core.tenant(request.tenant), request.episode_id)
        yield retrieval_pb2.ReadNoteFileResponse(
            content_type=file.content_type, size=file.size, name=file.name
        )
        async for piece in pieces(file):
            yield retrieval_pb2.ReadNoteFileResponse(data=piece)

    async def ListNotes(
        self, request: retrieval_pb2.ListNotesRequest, context: Context
    ) -> retrieval_pb2.ListNotesResponse:
        core = self._slot.get()
        metas = await list_notes(
            core.store, core.tenant(request.tenant), request.since, request.until, request.limit
        )
        return retrieval_pb2.ListNotesResponse(
            notes=[
                retrieval_pb2.NoteSummary(
                    episode_id=m.id,
                    title=m.title,
                    path=m.path,
                    date=m.date,
                    tags=list(m.tags),
                    sensitive=m.sensitive,
                )
                for m in metas
            ]
        )

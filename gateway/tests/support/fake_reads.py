"""The memory reads of the fake orchestrator (``fakes``): records, a person's timeline, the inbox
and notes (their text, versions and files) over a fixed set, in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from google.protobuf import json_format

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied

from .fake_data import ITEM, Context, check_as_of


def _record(collection: str, fields: dict[str, Any], sensitive: bool = False) -> pb.MemoryRecord:
    record = pb.MemoryRecord(
        collection=collection, id=str(fields["id"]), citation=f"{collection}:x", sensitive=sensitive
    )
    json_format.ParseDict(fields, record.fields)
    return record


class MemoryReads:
    """The orchestrator's memory reads over a fixed set: one person, two inbox items, one note
    (edited once: two versions) and one sensitive one. Keeps the requests it saw. The read policy itself is tested on the
    real orchestrator (services/orchestrator/tests/test_reads.py, tests/e2e/test_read_policy.py);
    this fake only says no where the policy would."""

    INBOX: ClassVar[list[dict[str, str]]] = [
        {"id": "i1", "title": "Call the landlord", "status": "open", "date": "2026-03-02"},
        {"id": "i2", "title": "Pay the allotment", "status": "done", "date": "2026-03-01"},
    ]

    def __init__(self) -> None:
        self.queries: list[pb.QueryRecordsRequest] = []
        self.reads: list[Any] = []

    async def QueryRecords(
        self, request: pb.QueryRecordsRequest, context: Context
    ) -> pb.QueryRecordsResponse:
        self.queries.append(request)
        check_as_of(request.filters.as_of)
        if request.collection not in ("inbox", "entities", "events"):
            raise PermissionDenied(f"collection {request.collection!r} is not allowlisted")
        if request.collection != "inbox":
            return pb.QueryRecordsResponse()
        return pb.QueryRecordsResponse(records=[_record("inbox", f) for f in self.INBOX])

    async def PersonTimeline(
        self, request: pb.PersonTimelineRequest, context: Context
    ) -> pb.PersonTimelineResponse:
        self.reads.append(request)
        check_as_of(request.filters.as_of)
        if request.person.casefold() not in ("graham", "graham-pearce"):
            raise NotFound(f"no person or entity matches {request.person!r}")
        return pb.PersonTimelineResponse(
            entity=_record("entities", {"id": "graham", "name": "Graham"}),
            entries=[pb.TimelineEntry(date="2026-02-01", item=ITEM)],
        )

    async def ListInbox(
        self, request: pb.ListInboxRequest, context: Context
    ) -> pb.ListInboxResponse:
        self.reads.append(request)
        check_as_of(request.as_of)
        items = [f for f in self.INBOX if request.include_done or f["status"] != "done"]
        return pb.ListInboxResponse(items=[_record("inbox", f) for f in items])

    async def GetNote(self, request: pb.GetNoteRequest, context: Context) -> pb.GetNoteResponse:
        self.reads.append(request)
        if not request.episode_id:
            raise InvalidArgument("episode_id is required")
        if request.episode_id == "ep-private" and not request.include_sensitive:
            raise PermissionDenied(
                "note ep-private is marked sensitive; ask with include_sensitive"
            )
        if request.episode_id not in ("ep-1", "ep-1@v1", "ep-private"):
            raise NotFound(f"no note with episode_id {request.episode_id!r}")
        earlier = request.episode_id == "ep-1@v1"  # the version before an edit (docs/as-of.md)
        said = "Graham agreed to return £900 of the deposit." if earlier else ITEM.text
        return pb.GetNoteResponse(
            episode_id=request.episode_id,
            title="Flat lease",
            path="home/Flat lease.md",
            date="2026-02-01",
            tags=["home"],
            sensitive=request.episode_id == "ep-private",
            text=f"# Deposit\n{said}",
            sections=[pb.NoteSection(id="chunk-1", ordinal=0, heading="Deposit", start=10, end=56)],
            citation="[[Flat lease]]",
            versions=self.VERSIONS if request.episode_id != "ep-private" else [],
        )

    # ep-1's versions: edited once, on 1 March.
    VERSIONS: ClassVar[list[pb.NoteVersion]] = [
        pb.NoteVersion(
            episode_id="ep-1@v1",
            number=1,
            valid_from="2026-01-10T12:00:00Z",
            valid_to="2026-03-01T12:00:00Z",
        ),
        pb.NoteVersion(episode_id="ep-1", number=2, valid_from="2026-03-01T12:00:00Z"),
    ]

    MEMO = b"RIFF" + bytes(range(256)) * 1200  # a voice memo's bytes: more than one piece

    async def ReadNoteFile(
        self, request: pb.ReadNoteFileRequest, context: Context
    ) -> AsyncIterator[pb.ReadNoteFileResponse]:
        self.reads.append(request)
        if request.episode_id == "ep-1":
            raise FailedPrecondition("home/Flat lease.md is not a voice memo or a PDF")
        if request.episode_id != "ep-memo":
            # Unknown or sensitive notes fail as their text does.
            asked = pb.GetNoteRequest(
                episode_id=request.episode_id, include_sensitive=request.include_sensitive
            )
            await self.GetNote(asked, context)
        yield pb.ReadNoteFileResponse(
            content_type="audio/wav", size=len(self.MEMO), name="2026-03-14 walk memo.wav"
        )
        for start in range(0, len(self.MEMO), 256 * 1024):
            yield pb.ReadNoteFileResponse(data=self.MEMO[start : start + 256 * 1024])

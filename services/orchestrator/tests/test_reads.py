"""The read policy (issue 11) on real gRPC servers on port 0: the real orchestrator servicer and
engine, its real retrieval client, in front of a retrieval servicer that serves fixed data and
ignores every filter (so what comes back is what the orchestrator's policy let through)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.wire.clients import GrpcMemory
from memex.retrieval.v1 import retrieval_pb2 as rpb
from memex.retrieval.v1 import retrieval_pb2_grpc

from .fakes import ScriptedReasoner, make_orchestrator, serving


def _struct(values: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    json_format.ParseDict(values, out)
    return out


def chunk(cid: str, date: str, tags: list[str], sensitive: bool = False) -> rpb.RetrievedItem:
    return rpb.RetrievedItem(
        id=cid,
        kind=rpb.ITEM_KIND_CHUNK,
        text=f"text of {cid}",
        citation=f"[[{cid}]]",
        sensitive=sensitive,
        provenance=common_pb2.Provenance(
            episode_id=f"ep-{cid}", date=date, title=cid, path=f"{cid}.md", heading="H"
        ),
        channel_scores=[
            common_pb2.ChannelScore(channel=common_pb2.CHANNEL_VECTOR, rank=1, score=0.8)
        ],
        fused_score=0.02,
        recency_factor=0.9,
        salience_factor=1.1,
        score=0.0198,
        attributes=_struct({"tags": tags}),
    )


def record(collection: str, fields: dict[str, Any], sensitive: bool = False) -> rpb.Record:
    return rpb.Record(
        collection=collection,
        id=fields["id"],
        fields=_struct(fields),
        citation=f"{collection}:{fields['id']}",
        sensitive=sensitive,
    )


ITEMS = [
    chunk("deposit", "2026-04-28", ["home"]),
    chunk("therapy", "2026-03-12", ["health"], sensitive=True),
    chunk("boiler", "2025-11-02", ["home", "repairs"]),
    chunk("undated", "", ["home"]),
]
EVENT = record("events", {"id": "ev-1", "date": "2026-02-01", "title": "Moved in"})
ITEM_RECORD = rpb.RetrievedItem(
    id="events:ev-1", kind=rpb.ITEM_KIND_RECORD, collection="events", citation="events:ev-1",
    provenance=common_pb2.Provenance(date="2026-02-01"),
)  # fmt: skip
OTHER_RECORD = rpb.RetrievedItem(
    id="beliefs:b-1", kind=rpb.ITEM_KIND_BELIEF, collection="beliefs", citation="beliefs:b-1",
    provenance=common_pb2.Provenance(date="2026-02-02"),
)  # fmt: skip
ENTITIES = [
    record("entities", {"id": "graham-pearce", "name": "Graham Pearce", "aliases": ["Graham"]}),
    record("entities", {"id": "ruth-ellison", "name": "Ruth Ellison"}, sensitive=True),
    record("entities", {"id": "chioma-okafor", "name": "Chioma Okafor"}),
    record("entities", {"id": "maya-okafor", "name": "Maya Okafor"}),
]
INBOX = [
    record("inbox", {"id": "i1", "title": "Call the landlord", "due": "2026-12-01"}),
    record("inbox", {"id": "i2", "title": "Book a session", "due": "2026-12-03"}, sensitive=True),
]


class Retrieval(retrieval_pb2_grpc.RetrievalServiceServicer):
    """Fixed data, every filter ignored; keeps the requests it saw."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def Search(self, request: Any, context: Any) -> rpb.SearchResponse:
        self.seen.append(request)
        return rpb.SearchResponse(items=[*ITEMS, ITEM_RECORD, OTHER_RECORD])

    async def QueryRecords(self, request: Any, context: Any) -> rpb.QueryRecordsResponse:
        self.seen.append(request)
        if request.collection == "entities":
            return rpb.QueryRecordsResponse(records=ENTITIES)
        return rpb.QueryRecordsResponse(records=[EVENT, *INBOX])

    async def PersonTimeline(self, request: Any, context: Any) -> rpb.PersonTimelineResponse:
        self.seen.append(request)
        [entity] = [e for e in ENTITIES if e.id == request.entity_id]
        entries = [rpb.TimelineEntry(date=i.provenance.date, item=i) for i in ITEMS]
        return rpb.PersonTimelineResponse(entity=entity, entries=entries)

    async def ListInbox(self, request: Any, context: Any) -> rpb.ListInboxResponse:
        self.seen.append(request)
        return rpb.ListInboxResponse(items=INBOX)

    async def GetNote(self, request: Any, context: Any) -> rpb.GetNoteResponse:
        if request.episode_id not in ("ep-deposit", "ep-therapy"):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no note {request.episode_id!r}")
        return rpb.GetNoteResponse(
            episode_id=request.episode_id,
            title=request.episode_id[3:],
            text="the note's private text",
            sensitive=request.episode_id == "ep-therapy",
            chunks=[rpb.NoteChunk(id="c", ordinal=0, heading="H", start=0, end=3)],
        )

    async def ReadNoteFile(
        self, request: Any, context: Any
    ) -> AsyncIterator[rpb.ReadNoteFileResponse]:
        self.seen.append(request)
        yield rpb.ReadNoteFileResponse(content_type="audio/mpeg", size=7, name="memo.mp3")
        for piece in (b"ID3", b"memo"):
            yield rpb.ReadNoteFileResponse(data=piece)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Retrieval, Orchestrator]]:
    retrieval = Retrieval()  # type: ignore[abstract]
    backend = grpc.aio.server()
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(retrieval, backend)
    backend_port = backend.add_insecure_port("127.0.0.1:0")
    await backend.start()
    memory = GrpcMemory(f"127.0.0.1:{backend_port}")
    orchestrator = make_orchestrator(tmp_path, ScriptedReasoner({}), memory)  # type: ignore[arg-type]
    try:
        async with serving(orchestrator) as stub:
            yield stub, retrieval, orchestrator
    finally:
        await memory.close()
        await backend.stop(None)


async def search(stub: Any, **filters: Any) -> list[pb.MemoryItem]:
    k = filters.pop("k", 0)
    channels = filters.pop("channels", [])
    request = pb.SearchRequest(
        query="deposit", k=k, channels=channels, filters=pb.MemoryFilters(**filters)
    )
    reply = await stub.Search(request)
    return list(reply.items)


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call
    return failed.value


async def test_search_leaves_out_sensitive_items_unless_asked(served: Any) -> None:
    stub, retrieval, _ = served
    ids = [i.id for i in await search(stub)]
    assert "therapy" not in ids and "deposit" in ids
    assert retrieval.seen[-1].filters.include_sensitive is False  # asked of retrieval too
    asked = await search(stub, include_sensitive=True)
    assert "therapy" in [i.id for i in asked]


async def test_search_filters_change_the_result(served: Any) -> None:
    stub, retrieval, _ = served
    assert await search(stub, since="2030-01-01") == []
    sent = retrieval.seen[-1]
    assert sent.filters.window.start == "2030-01-01"
    window = [i.id for i in await search(stub, since="2026-01-01", until="2026-04-30")]
    assert window == ["deposit", "events:ev-1", "beliefs:b-1"]  # undated and 2025 left out
    assert [i.id for i in await search(stub, tags=["#Repairs"])] == ["boiler"]
    assert len(await search(stub, k=2)) == 2
    kept = [i.id for i in await search(stub, collections=["events"])]
    assert "events:ev-1" in kept and "beliefs:b-1" not in kept and "deposit" in kept
    await search(stub, channels=[common_pb2.CHANNEL_KEYWORD])
    assert list(retrieval.seen[-1].channels) == [common_pb2.CHANNEL_KEYWORD]


async def test_search_items_keep_their_full_provenance(served: Any) -> None:
    stub, _, orchestrator = served
    reply = await stub.Search(pb.SearchRequest(query="deposit", k=1))
    [item] = reply.items
    p = item.provenance
    assert (p.episode_id, p.title, p.path, p.heading, p.date) == (
        "ep-deposit", "deposit", "deposit.md", "H", "2026-04-28",
    )  # fmt: skip
    assert list(item.tags) == ["home"] and item.citation == "[[deposit]]"
    [score] = item.channel_scores
    assert (score.channel, score.rank, score.score) == (common_pb2.CHANNEL_VECTOR, 1, 0.8)
    assert (item.fused_score, item.recency_factor, item.salience_factor, item.score) == (
        0.02, 0.9, 1.1, 0.0198,
    )  # fmt: skip
    [turn] = orchestrator.store.query(
        "SELECT kind FROM telemetry_turns WHERE id = ?", reply.turn_id
    )
    assert turn["kind"] == "search"


@pytest.mark.parametrize(
    ("filters", "fragment"),
    [
        ({"since": "2026-05-01", "until": "2026-04-01"}, "before since"),
        ({"since": "28/04/2026"}, "YYYY-MM-DD"),
        ({"until": "2026-13-01"}, "YYYY-MM-DD"),
        ({"k": 101}, "between 0 and 100"),
        ({"k": -1}, "between 0 and 100"),
        ({"channels": [99]}, "unknown channel"),
    ],
)
async def test_bad_search_input_is_invalid_argument(
    served: Any, filters: dict[str, Any], fragment: str
) -> None:
    stub, _, _ = served
    error = await refused(search(stub, **filters))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in (error.details() or "")


async def test_records_and_inbox_drop_sensitive_ones_unless_asked(served: Any) -> None:
    stub, _, _ = served
    reply = await stub.QueryRecords(pb.QueryRecordsRequest(collection="inbox"))
    assert [r.id for r in reply.records] == ["ev-1", "i1"]
    asked = pb.MemoryFilters(include_sensitive=True)
    reply = await stub.QueryRecords(pb.QueryRecordsRequest(collection="inbox", filters=asked))
    assert [r.id for r in reply.records] == ["ev-1", "i1", "i2"]
    window = pb.MemoryFilters(since="2026-06-01")
    reply = await stub.QueryRecords(pb.QueryRecordsRequest(collection="inbox", filters=window))
    assert [r.id for r in reply.records] == ["i1"]
    reply = await stub.QueryRecords(pb.QueryRecordsRequest(collection="inbox", limit=1))
    assert len(reply.records) == 1
    inbox = await stub.ListInbox(pb.ListInboxRequest())
    assert [r.id for r in inbox.items] == ["i1"]
    inbox = await stub.ListInbox(pb.ListInboxRequest(include_sensitive=True))
    assert [r.id for r in inbox.items] == ["i1", "i2"]
    error = await refused(stub.ListInbox(pb.ListInboxRequest(limit=1001)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_timeline_resolves_names_and_applies_the_policy(served: Any) -> None:
    stub, retrieval, _ = served
    reply = await stub.PersonTimeline(pb.PersonTimelineRequest(person="graham"))
    assert reply.entity.id == "graham-pearce" and retrieval.seen[-1].entity_id == "graham-pearce"
    assert [e.item.id for e in reply.entries] == ["deposit", "boiler", "undated"]
    window = pb.MemoryFilters(since="2026-01-01", include_sensitive=True)
    reply = await stub.PersonTimeline(pb.PersonTimelineRequest(person="Graham", filters=window))
    assert [e.item.id for e in reply.entries] == ["deposit", "therapy"]
    error = await refused(stub.PersonTimeline(pb.PersonTimelineRequest(person="Ruth")))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "include_sensitive" in (error.details() or "")
    asked = pb.MemoryFilters(include_sensitive=True)
    ruth = await stub.PersonTimeline(pb.PersonTimelineRequest(person="Ruth", filters=asked))
    assert ruth.entity.id == "ruth-ellison"
    error = await refused(stub.PersonTimeline(pb.PersonTimelineRequest(person="okafor")))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "chioma-okafor" in (error.details() or "")
    error = await refused(stub.PersonTimeline(pb.PersonTimelineRequest(person="Nobody")))
    assert error.code() == grpc.StatusCode.NOT_FOUND


async def test_a_sensitive_note_is_refused_unless_asked(served: Any) -> None:
    stub, _, _ = served
    error = await refused(stub.GetNote(pb.GetNoteRequest(episode_id="ep-therapy")))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "include_sensitive: true" in (error.details() or "")
    assert "private text" not in (error.details() or "")
    note = await stub.GetNote(pb.GetNoteRequest(episode_id="ep-therapy", include_sensitive=True))
    assert note.text == "the note's private text" and note.sensitive
    plain = await stub.GetNote(pb.GetNoteRequest(episode_id="ep-deposit"))
    assert plain.citation == "[[deposit]]" and [s.id for s in plain.sections] == ["c"]
    error = await refused(stub.GetNote(pb.GetNoteRequest(episode_id="ep-gone")))
    assert error.code() == grpc.StatusCode.NOT_FOUND


async def refused_file(stub: Any, episode_id: str) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        async for _ in stub.ReadNoteFile(pb.ReadNoteFileRequest(episode_id=episode_id)):
            pass
    return failed.value


async def test_a_notes_file_is_relayed_only_where_its_text_may_be_read(served: Any) -> None:
    stub, retrieval, _ = served
    error = await refused_file(stub, "ep-therapy")
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert not [r for r in retrieval.seen if isinstance(r, rpb.ReadNoteFileRequest)]  # no byte
    error = await refused_file(stub, "ep-gone")
    assert error.code() == grpc.StatusCode.NOT_FOUND

    replies = [r async for r in stub.ReadNoteFile(pb.ReadNoteFileRequest(episode_id="ep-deposit"))]
    assert (replies[0].content_type, replies[0].size, replies[0].name) == (
        "audio/mpeg",
        7,
        "memo.mp3",
    )
    assert b"".join(r.data for r in replies[1:]) == b"ID3memo"


async def test_records_timeline_and_inbox_as_of_a_day_ask_retrieval_for_that_day(
    served: Any,
) -> None:
    """docs/as-of.md: the day goes to every retrieval call of the read (the timeline's entity
    lookup too), and a day that is not one is refused before retrieval is asked."""
    stub, retrieval, _ = served
    day = pb.MemoryFilters(as_of="2026-02-01")
    await stub.QueryRecords(pb.QueryRecordsRequest(collection="inbox", filters=day))
    assert retrieval.seen[-1].as_of == "2026-02-01"
    seen = len(retrieval.seen)
    await stub.PersonTimeline(pb.PersonTimelineRequest(person="graham", filters=day))
    assert [r.as_of for r in retrieval.seen[seen:]] == ["2026-02-01", "2026-02-01"]
    await stub.ListInbox(pb.ListInboxRequest(as_of="2026-02-01"))
    assert retrieval.seen[-1].as_of == "2026-02-01"
    await stub.ListInbox(pb.ListInboxRequest())
    assert retrieval.seen[-1].as_of == ""
    seen = len(retrieval.seen)
    for bad in (
        stub.ListInbox(pb.ListInboxRequest(as_of="Feb 1")),
        stub.QueryRecords(
            pb.QueryRecordsRequest(collection="inbox", filters=pb.MemoryFilters(as_of="2999-01-01"))
        ),
    ):
        error = await refused(bad)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "as_of" in (
            error.details() or ""
        )
    assert len(retrieval.seen) == seen

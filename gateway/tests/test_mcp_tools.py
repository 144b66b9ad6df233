"""The MCP tools through the SDK's in-memory client, against real in-process gRPC servers on
port 0 whose servicers are fakes: what each tool sends, its typed result, and its errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, struct_pb2
from mcp import Client
from mcp.types import CallToolResult

from memex.common.v1 import common_pb2
from memex.gateway.mcp.server import build_server
from memex.gateway.mcp.settings import McpSettings
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.stack_settings import StackSettings
from memex.testing import free_port, free_ports


def record(collection: str, fields: dict[str, Any]) -> opb.MemoryRecord:
    s = struct_pb2.Struct()
    s.update(fields)
    return opb.MemoryRecord(
        collection=collection, id=fields["id"], fields=s, citation=f"{collection}:{fields['id']}"
    )


ITEM = opb.MemoryItem(
    id="c1",
    kind=opb.ITEM_KIND_CHUNK,
    text="Graham agreed to return £1,030.",
    citation="[[Flat Deposit]]",
    provenance=common_pb2.Provenance(episode_id="ep1", date="2026-04-28", title="Flat Deposit"),
    channel_scores=[common_pb2.ChannelScore(channel=common_pb2.CHANNEL_KEYWORD, rank=1)],
    score=0.5,
)


class Fake(orchestrator_pb2_grpc.OrchestratorServiceServicer):
    """The orchestrator, from fixed data; keeps the requests it saw. What the tools send and
    how they shape results is tested here; the read policy is tested on the real orchestrator
    (services/orchestrator/tests/test_reads.py, tests/e2e/test_read_policy.py)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def Ask(self, request: Any, context: Any) -> opb.AskResponse:
        self.seen.append(request)
        if request.question == "slow":
            await asyncio.sleep(0.6)
        return opb.AskResponse(
            answer="£1,030 came back.",
            persona=request.persona or "analyst",
            citations=[
                common_pb2.Citation(ref="[[Flat Deposit]]", support=common_pb2.SUPPORT_VERBATIM),
                common_pb2.Citation(ref="[[Journal]]", support=common_pb2.SUPPORT_INFERENCE),
            ],
            withheld=1,
            grounding=opb.GroundingReport(cited=2, grounded=2, score=1.0),
            as_of=request.as_of,
        )

    async def Search(self, request: Any, context: Any) -> opb.SearchResponse:
        self.seen.append(request)
        return opb.SearchResponse(items=[ITEM])

    async def QueryRecords(self, request: Any, context: Any) -> opb.QueryRecordsResponse:
        self.seen.append(request)
        if request.collection == "secrets":
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "'secrets' is not allowlisted")
        event = {"id": "ev-1", "title": "Boiler fixed", "date": "2025-03-31"}
        return opb.QueryRecordsResponse(records=[record(request.collection, event)])

    async def PersonTimeline(self, request: Any, context: Any) -> opb.PersonTimelineResponse:
        self.seen.append(request)
        if request.person == "Nobody":
            await context.abort(grpc.StatusCode.NOT_FOUND, "no person matches 'Nobody'")
        return opb.PersonTimelineResponse(
            entity=record("entities", {"id": "chioma-okafor", "name": "Chioma Okafor"}),
            entries=[opb.TimelineEntry(date="2026-04-28", item=ITEM)],
        )

    async def ListInbox(self, request: Any, context: Any) -> opb.ListInboxResponse:
        self.seen.append(request)
        task = {"id": "inbox-1", "title": "Pay rent", "status": "pending"}
        return opb.ListInboxResponse(items=[record("inbox", task)])

    async def GetNote(self, request: Any, context: Any) -> opb.GetNoteResponse:
        self.seen.append(request)
        if request.episode_id != "ep1":
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no note {request.episode_id!r}")
        section = opb.NoteSection(id="c1", heading="Deposit", start=0, end=9)
        return opb.GetNoteResponse(
            episode_id="ep1", title="Flat Deposit", path="home/Flat Deposit.md", tags=["home"],
            text="# Deposit\nGraham returned £1,030.", sections=[section],
            citation="[[Flat Deposit]]",
            versions=[
                opb.NoteVersion(episode_id="ep1@v1", number=1, valid_from="2026-01-10T12:00:00Z",
                                valid_to="2026-03-01T12:00:00Z"),
                opb.NoteVersion(episode_id="ep1", number=2, valid_from="2026-03-01T12:00:00Z"),
            ],
        )  # fmt: skip


@pytest.fixture
async def stack() -> AsyncIterator[tuple[StackSettings, Fake]]:
    """A server for the orchestrator; the MCP client is entered in each test's own task (anyio's
    cancel scopes must exit in the task that entered them)."""
    fake = Fake()  # type: ignore[abstract]
    server = grpc.aio.server()
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    settings = StackSettings(retrieval_port=free_port(), orchestrator_port=port)
    try:
        yield settings, fake
    finally:
        await server.stop(None)


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return str(getattr(result.content[0], "text", ""))


async def test_ask_returns_labelled_citations(stack: Any) -> None:
    settings, fake = stack
    async with Client(build_server(settings)) as mcp:
        await _test_ask_returns_labelled_citations(mcp, fake)


async def _test_ask_returns_labelled_citations(mcp: Client, fake: Any) -> None:
    out = data(await mcp.call_tool("ask", {"question": "deposit?", "persona": "coach", "limit": 3}))
    assert (fake.seen[-1].question, fake.seen[-1].persona, fake.seen[-1].limit) == (
        "deposit?",
        "coach",
        3,
    )
    assert out["answer"] == "£1,030 came back." and out["withheld"] == 1
    assert [(c["support"], c["support_label"]) for c in out["citations"]] == [
        ("verbatim", "verbatim"),
        ("inference", "reading between the lines"),
    ]
    assert out["grounding_score"] == 1.0 and out["abstained"] is False


async def test_search_sends_every_filter_and_keeps_provenance(stack: Any) -> None:
    settings, fake = stack
    async with Client(build_server(settings)) as mcp:
        args = {
            "query": "deposit", "k": 3, "channels": ["keyword", "graph"], "since": "2026-01-01",
            "until": "2026-06-30", "tags": ["home"], "collections": ["events"],
        }  # fmt: skip
        out = data(await mcp.call_tool("search", args))
    request = fake.seen[-1]
    assert list(request.channels) == [common_pb2.CHANNEL_KEYWORD, common_pb2.CHANNEL_GRAPH]
    f = request.filters
    assert (request.k, f.since, f.until, list(f.tags), list(f.collections)) == (
        3, "2026-01-01", "2026-06-30", ["home"], ["events"],
    )  # fmt: skip
    assert f.include_sensitive is False
    [hit] = out["hits"]
    assert hit["citation"] == "[[Flat Deposit]]" and hit["provenance"]["episode_id"] == "ep1"
    assert hit["kind"] == "chunk"
    assert hit["channel_scores"] == [{"channel": "keyword", "rank": 1, "score": 0.0}]


async def test_ask_and_search_as_of_a_day(stack: Any) -> None:
    """docs/as-of.md: the day reaches the orchestrator; the answer says which day answered; a
    malformed one is the tool's input error, not a call."""
    settings, fake = stack
    async with Client(build_server(settings)) as mcp:
        out = data(await mcp.call_tool("ask", {"question": "deposit?", "as_of": "2026-02-01"}))
        assert fake.seen[-1].as_of == "2026-02-01" and out["as_of"] == "2026-02-01"
        data(await mcp.call_tool("search", {"query": "deposit", "as_of": "2026-02-01"}))
        assert fake.seen[-1].filters.as_of == "2026-02-01"
        seen = len(fake.seen)
        assert "as_of" in error_text(await mcp.call_tool("search", {"query": "x", "as_of": "May"}))
        assert len(fake.seen) == seen
        data(await mcp.call_tool("query_records", {"collection": "events", "as_of": "2026-02-01"}))
        assert fake.seen[-1].filters.as_of == "2026-02-01"
        data(await mcp.call_tool("person_timeline", {"person": "Graham", "as_of": "2026-02-01"}))
        assert fake.seen[-1].filters.as_of == "2026-02-01"
        data(await mcp.call_tool("list_inbox", {"as_of": "2026-02-01"}))
        assert fake.seen[-1].as_of == "2026-02-01"
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
    for name in ("ask", "search", "query_records", "person_timeline", "list_inbox"):
        schema = tools[name].input_schema["properties"]["as_of"]
        assert "end of that day" in schema["description"]


async def test_sensitive_reads_need_the_setting(stack: Any) -> None:
    """Reads, and asks: an answer drawn from sensitive notes is a read of them (issue 11)."""
    settings, fake = stack
    calls: list[tuple[str, dict[str, Any]]] = [
        ("ask", {"question": "x", "include_sensitive": True}),
        ("search", {"query": "x", "include_sensitive": True}),
        ("query_records", {"collection": "events", "include_sensitive": True}),
        ("person_timeline", {"person": "chi", "include_sensitive": True}),
        ("list_inbox", {"include_sensitive": True}),
        ("get_note", {"episode_id": "ep1", "include_sensitive": True}),
    ]
    async with Client(build_server(settings)) as mcp:
        for name, args in calls:
            assert "MEMEX_MCP_ALLOW_SENSITIVE" in error_text(await mcp.call_tool(name, args))
    assert fake.seen == []  # refused before any read
    allowed = McpSettings(allow_sensitive=True)
    async with Client(build_server(settings, mcp_settings=allowed)) as mcp:
        for name, args in calls:
            data(await mcp.call_tool(name, args))
    assert len(fake.seen) == len(calls)
    assert all(
        (r.include_sensitive if hasattr(r, "include_sensitive") else r.filters.include_sensitive)
        for r in fake.seen
    )


async def test_query_records_filters_reach_the_service_typed(stack: Any) -> None:
    settings, fake = stack
    async with Client(build_server(settings)) as mcp:
        await _test_query_records_filters_reach_the_service_typed(mcp, fake)


async def _test_query_records_filters_reach_the_service_typed(mcp: Client, fake: Any) -> None:
    filters = [
        {"field": "date", "op": "gte", "value": "2025-01-01"},
        {"field": "n", "op": "in", "value": [1, 2]},
        {"field": "done", "op": "eq", "value": False},
    ]
    out = data(await mcp.call_tool("query_records", {"collection": "events", "filters": filters}))
    sent = [(f.field, f.op, json_format.MessageToDict(f.value)) for f in fake.seen[-1].filter]
    assert sent == [("date", "gte", "2025-01-01"), ("n", "in", [1, 2]), ("done", "eq", False)]
    assert out["records"][0]["citation"] == "events:ev-1"
    assert out["records"][0]["fields"]["title"] == "Boiler fixed"


async def test_timeline_by_name_and_inbox(stack: Any) -> None:
    settings, fake = stack
    async with Client(build_server(settings)) as mcp:
        await _test_timeline_by_name_and_inbox(mcp, fake)


async def _test_timeline_by_name_and_inbox(mcp: Client, fake: Any) -> None:
    out = data(await mcp.call_tool("person_timeline", {"person": "chi"}))
    assert fake.seen[-1].person == "chi"  # the orchestrator resolves names
    assert out["entity"]["id"] == "chioma-okafor"
    assert out["entries"][0]["item"]["citation"] == "[[Flat Deposit]]"
    inbox = data(await mcp.call_tool("list_inbox", {"include_done": True}))
    assert fake.seen[-1].include_done and inbox["items"][0]["id"] == "inbox-1"


async def test_errors_are_tool_errors(stack: Any) -> None:
    settings, _ = stack
    async with Client(build_server(settings)) as mcp:
        await _test_errors_are_tool_errors(mcp, _)


async def _test_errors_are_tool_errors(mcp: Client, _: Any) -> None:
    assert "allowlisted" in error_text(
        await mcp.call_tool("query_records", {"collection": "secrets"})
    )
    assert "Nobody" in error_text(await mcp.call_tool("person_timeline", {"person": "Nobody"}))
    bad = error_text(await mcp.call_tool("search", {"query": "x", "channels": ["psychic"]}))
    assert "channels" in bad
    assert "question" in error_text(await mcp.call_tool("ask", {}))
    assert data(await mcp.call_tool("list_inbox", {}))  # still serving after the errors


async def test_a_stopped_stack_says_memex_up() -> None:
    retrieval_port, orchestrator_port = free_ports(2)
    settings = StackSettings(retrieval_port=retrieval_port, orchestrator_port=orchestrator_port)
    async with Client(build_server(settings)) as mcp:
        for name, args in [("ask", {"question": "q"}), ("list_inbox", {})]:
            text = error_text(await mcp.call_tool(name, args))
            assert "memex isn't running" in text and "memex up" in text


async def test_get_note_of_a_citation(stack: Any) -> None:
    settings, _ = stack
    async with Client(build_server(settings)) as mcp:
        hit = data(await mcp.call_tool("search", {"query": "deposit"}))["hits"][0]
        episode_id = hit["provenance"]["episode_id"]
        note = data(await mcp.call_tool("get_note", {"episode_id": episode_id}))
        assert note["citation"] == hit["citation"] == "[[Flat Deposit]]"
        assert note["text"].startswith("# Deposit") and note["tags"] == ["home"]
        assert note["sections"] == [
            {"id": "c1", "ordinal": 0, "heading": "Deposit", "start": 0, "end": 9}
        ]
        assert [(v["episode_id"], v["valid_to"]) for v in note["versions"]] == [
            ("ep1@v1", "2026-03-01T12:00:00Z"),
            ("ep1", ""),
        ]
        missing = error_text(await mcp.call_tool("get_note", {"episode_id": "gone"}))
        assert missing.endswith("not_found: no note 'gone'")


async def test_a_long_ask_reports_progress(stack: Any) -> None:
    settings, _ = stack
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(build_server(settings, progress_every_s=0.1)) as mcp:
        out = data(await mcp.call_tool("ask", {"question": "slow"}, progress_callback=on_progress))
    assert out["answer"]
    assert len(seen) >= 3
    assert [v for v, _ in seen] == sorted(v for v, _ in seen)
    assert all(m and m.startswith("thinking") for _, m in seen)


async def test_an_ask_withholds_sensitive_notes_by_default(stack: Any) -> None:
    settings, fake = stack
    allowed = McpSettings(allow_sensitive=True)  # even allowed, only a call that asks gets them
    async with Client(build_server(settings, mcp_settings=allowed)) as mcp:
        data(await mcp.call_tool("ask", {"question": "x"}))
    assert isinstance(fake.seen[-1], opb.AskRequest) and fake.seen[-1].include_sensitive is False

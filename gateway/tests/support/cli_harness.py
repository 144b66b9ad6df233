"""What the `memex` command tests run against: a fake orchestrator, served over real gRPC on port 0
by the ``stack`` fixture (``conftest``), whose reads and answers are fixed data; and `memex` itself
run as a subprocess, piped (``memex``) or on a terminal (``on_terminal``)."""

from __future__ import annotations

import asyncio
import os
import pty
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf import struct_pb2

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.orchestrator.v1 import orchestrator_pb2_grpc

ENTITIES = [
    {"id": "graham-pearce", "name": "Graham Pearce", "aliases": ["Graham"]},
    {"id": "chioma-okafor", "name": "Chioma Okafor", "aliases": ["Chi"]},
    {"id": "maya-okafor", "name": "Maya Okafor", "aliases": ["Maya"]},
]
CITATIONS = [
    common_pb2.Citation(
        ref="[[Flat Deposit]]", support=common_pb2.SUPPORT_VERBATIM, quote="£1,030"
    ),
    common_pb2.Citation(ref="events:ev-1", support=common_pb2.SUPPORT_PARAPHRASE),
    common_pb2.Citation(ref="[[Journal]]", support=common_pb2.SUPPORT_INFERENCE),
]
ABSTENTION = (
    "I could not ground an answer to this in your notes, so I won't guess. "
    "The closest notes were [[Flat Deposit]]."
)


def record(collection: str, fields: dict[str, Any]) -> opb.MemoryRecord:
    s = struct_pb2.Struct()
    s.update(fields)
    return opb.MemoryRecord(
        collection=collection, id=fields["id"], fields=s, citation=f"{collection}:{fields['id']}"
    )


ITEM = opb.MemoryItem(
    id="c1", text="Graham agreed to return £1,030.", citation="[[Flat Deposit]]",
    provenance=common_pb2.Provenance(episode_id="ep1", date="2026-04-28", path="home/Flat.md"),
    channel_scores=[common_pb2.ChannelScore(channel=common_pb2.CHANNEL_VECTOR, rank=2, score=0.7)],
    fused_score=0.03, recency_factor=0.9, salience_factor=1.1, score=0.0297,
)  # fmt: skip


class Reads(orchestrator_pb2_grpc.OrchestratorServiceServicer):
    """The orchestrator's memory reads from fixed data; keeps the requests it saw. (Name
    resolution and the read policy are the orchestrator's, tested on the real one.)"""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def Search(self, request: Any, context: Any) -> opb.SearchResponse:
        self.seen.append(request)
        return opb.SearchResponse(items=[ITEM], turn_id="turn-1")

    async def QueryRecords(self, request: Any, context: Any) -> opb.QueryRecordsResponse:
        self.seen.append(request)
        if request.collection == "secrets":
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "collection 'secrets' ...")
        event = {"id": "ev-1", "title": "Boiler fixed", "date": "2025-03-31"}
        return opb.QueryRecordsResponse(records=[record(request.collection, event)])

    async def PersonTimeline(self, request: Any, context: Any) -> opb.PersonTimelineResponse:
        self.seen.append(request)
        if request.person == "Nobody":
            await context.abort(grpc.StatusCode.NOT_FOUND, "no person matches 'Nobody'")
        return opb.PersonTimelineResponse(
            entity=record("entities", ENTITIES[0]),
            entries=[opb.TimelineEntry(date="2026-04-28", item=ITEM)],
        )  # fmt: skip

    async def ListInbox(self, request: Any, context: Any) -> opb.ListInboxResponse:
        self.seen.append(request)
        task = {
            "id": "inbox-1",
            "title": "Pay allotment rent",
            "due": "2026-12-31",
            "status": "pending",
        }
        return opb.ListInboxResponse(items=[record("inbox", task)])  # fmt: skip

    async def GetNote(self, request: Any, context: Any) -> opb.GetNoteResponse:
        self.seen.append(request)
        if request.episode_id not in ("ep1", "ep1@v1"):
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no note {request.episode_id!r}")
        versions = [
            opb.NoteVersion(
                episode_id="ep1@v1",
                number=1,
                valid_from="2026-01-10T12:00:00Z",
                valid_to="2026-03-01T12:00:00Z",
            ),
            opb.NoteVersion(episode_id="ep1", number=2, valid_from="2026-03-01T12:00:00Z"),
        ]
        return opb.GetNoteResponse(
            episode_id=request.episode_id, title="Flat Deposit", path="home/Flat Deposit.md",
            date="2026-04-28", tags=["home"], text="# Deposit\nGraham returned £1,030.",
            citation="[[Flat Deposit]]", versions=versions,
        )  # fmt: skip


class Orchestrator(Reads):
    """A cited answer and a chat stream of fixed text, and the reads."""

    def __init__(self) -> None:
        super().__init__()
        self.chats: list[Any] = []
        self.asks: list[Any] = []

    async def Ask(self, request: Any, context: Any) -> opb.AskResponse:
        self.asks.append(request)
        if request.question == "reasoner down":
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the reasoner: GOAWAY received")
        if request.limit < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "limit must be >= 0")
        return opb.AskResponse(
            answer="£1,030 came back.", citations=CITATIONS, persona="analyst", as_of=request.as_of
        )

    async def AskStream(self, request: Any, context: Any) -> AsyncIterator[opb.AskStreamResponse]:
        """The same answer, drafted word by word. ``unsure`` drafts an answer the check turns
        into an abstention, ``second look`` sets a first draft aside, ``old stack`` predates
        AskStream, ``cut off`` ends without a result."""
        request = request.ask  # AskStreamRequest wraps Ask's request
        if request.question == "reasoner down":
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the reasoner: GOAWAY received")
        if request.question == "old stack":
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        if request.limit < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "limit must be >= 0")
        sources = [c.ref for c in CITATIONS]
        yield opb.AskStreamResponse(
            started=opb.AskStarted(model="tiny", persona="analyst", sources=sources)
        )
        if request.question == "unsure":
            for word in [" Maybe ", "£900, ", "see [[Diary]]."]:
                yield opb.AskStreamResponse(delta=word)
            yield opb.AskStreamResponse(result=opb.AskResponse(answer=ABSTENTION, abstained=True,
                persona="analyst", grounding=opb.GroundingReport(cited=1, dropped=["[[Diary]]"])))  # fmt: skip
            return
        if request.question == "second look":
            yield opb.AskStreamResponse(delta="I don't know.")
            yield opb.AskStreamResponse(redraft=opb.AskRedraft(reason="reading all 3 sources"))
        for word in ["£1,030 ", "came ", "back."]:
            yield opb.AskStreamResponse(delta=word)
        if request.question == "cut off":
            return
        reply = await self.Ask(request, context)
        yield opb.AskStreamResponse(result=reply)

    async def Chat(self, request: Any, context: Any) -> AsyncIterator[opb.ChatResponse]:
        """A message ``error:NAME`` ends the stream with that gRPC status after a word."""
        self.chats.append(request)
        conversation = request.conversation_id or f"conv-{len(self.chats)}"
        yield opb.ChatResponse(meta=opb.ChatMeta(conversation_id=conversation, as_of=request.as_of))
        if request.message.startswith("error:"):
            yield opb.ChatResponse(delta="Half ")
            await context.abort(grpc.StatusCode[request.message[6:]], "as asked")
        for word in ["You ", "said: ", request.message]:
            yield opb.ChatResponse(delta=word)
        yield opb.ChatResponse(citations=opb.ChatCitations(citations=CITATIONS))
        yield opb.ChatResponse(done=opb.ChatDone(message_id="m1"))


async def memex(env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.cli", *args, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def on_terminal(env: dict[str, str], *args: str, typed: bytes = b"") -> tuple[int, str]:
    """Runs memex with a terminal for stdin, stdout and stderr; its exit code and the screen."""
    master, slave = pty.openpty()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.cli", *args, env=env, stdin=slave, stdout=slave, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    os.write(master, typed)  # typed ahead; the terminal buffers it
    chunks: list[bytes] = []

    def read_all() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    await asyncio.wait_for(asyncio.to_thread(read_all), 60)
    os.close(master)
    code = await asyncio.wait_for(process.wait(), 30)
    return code, b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")

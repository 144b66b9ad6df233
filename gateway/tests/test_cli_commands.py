"""The `memex` read commands against real in-process gRPC servers on port 0 whose servicers are
fakes: what each command sends, what it prints (text and --json), and its exit code."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, struct_pb2

from memex.common.v1 import common_pb2
from memex.gateway.cli.records_commands import format_item
from memex.gateway.present import SearchHit
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.testing import free_port, free_ports

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
        """A message ``error:NAME`` ends the stream with that ChatErrorCode after a word."""
        self.chats.append(request)
        conversation = request.conversation_id or f"conv-{len(self.chats)}"
        yield opb.ChatResponse(meta=opb.ChatMeta(conversation_id=conversation))
        if request.message.startswith("error:"):
            code = opb.ChatErrorCode.Value(f"CHAT_ERROR_CODE_{request.message[6:]}")
            yield opb.ChatResponse(delta="Half ")
            yield opb.ChatResponse(error=opb.ChatError(code=code, message="as asked"))
            return
        for word in ["You ", "said: ", request.message]:
            yield opb.ChatResponse(delta=word)
        yield opb.ChatResponse(citations=opb.ChatCitations(citations=CITATIONS))
        yield opb.ChatResponse(done=opb.ChatDone(message_id="m1"))


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[tuple[dict[str, str], Reads, Orchestrator]]:
    # Fakes implement only what the CLI calls; the rest answer UNIMPLEMENTED. Every read goes
    # to the orchestrator: no retrieval service is served here at all.
    orchestrator = Orchestrator()  # type: ignore[abstract]
    retrieval = orchestrator
    server = grpc.aio.server()
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(orchestrator, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    env = {
        **os.environ,
        "MEMEX_DATA_DIR": str(tmp_path),
        "MEMEX_RETRIEVAL_PORT": str(free_port()),
        "MEMEX_ORCHESTRATOR_PORT": str(port),
    }
    try:
        yield env, retrieval, orchestrator
    finally:
        await server.stop(None)


async def memex(env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.gateway.cli", *args, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_query_sends_conditions_and_prints_records(stack: Any) -> None:
    env, retrieval, _ = stack
    code, out, _ = await memex(
        env, "query", "events", "--where", "date", ">=", "2025-01-01",
        "--where", "participants", "contains", "graham-pearce", "--where", "n", "in", "[1, 2]",
        "--sort=-date", "--limit", "5",
    )  # fmt: skip
    assert code == 0
    assert "2025-03-31  events:ev-1  Boiler fixed" in out
    request = retrieval.seen[-1]
    conditions: list[Any] = [
        (f.field, f.op, json_format.MessageToDict(f.value)) for f in request.filter
    ]
    assert conditions == [
        ("date", "gte", "2025-01-01"),
        ("participants", "contains", "graham-pearce"),
        ("n", "in", [1, 2]),
    ]
    assert (request.sort, request.limit) == ("-date", 5)
    code, out, _ = await memex(env, "query", "events", "--json")
    assert code == 0
    assert json.loads(out)["records"][0]["citation"] == "events:ev-1"


async def test_query_bad_input_exit_codes(stack: Any) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "query", "events", "--where", "date", "=~", "x")
    assert code == 2 and "unknown operator '=~'" in err
    code, _, err = await memex(env, "query", "secrets")
    assert code == 2 and "PERMISSION_DENIED" in err


async def test_timeline_and_search_go_to_the_orchestrator(stack: Any) -> None:
    env, reads, _ = stack
    code, out, _ = await memex(env, "timeline", "graham", "--since", "2026-01-01")
    assert code == 0
    request = reads.seen[-1]
    assert (request.person, request.filters.since) == ("graham", "2026-01-01")
    assert not request.filters.include_sensitive
    assert "# Graham Pearce" in out and "2026-04-28  [[Flat Deposit]]  Graham agreed" in out
    code, out, _ = await memex(env, "timeline", "graham", "--json")
    assert code == 0 and json.loads(out)["entity"]["id"] == "graham-pearce"
    code, _, err = await memex(env, "timeline", "Nobody")
    assert code == 4 and "Nobody" in err
    code, out, _ = await memex(
        env, "search", "deposit", "-k", "2", "--channels", "vector,keyword", "--tag", "home",
        "--until", "2026-12-31", "--include-sensitive", "--explain",
    )  # fmt: skip
    assert code == 0
    request = reads.seen[-1]
    assert (request.query, request.k, list(request.filters.tags)) == ("deposit", 2, ["home"])
    assert request.filters.until == "2026-12-31" and request.filters.include_sensitive
    assert "vector #2 (0.7)" in out and "fused 0.03000 x recency 0.900" in out
    code, _, err = await memex(env, "search", "x", "--channels", "psychic")
    assert code == 2 and "unknown channel 'psychic'" in err


async def test_inbox_and_note(stack: Any) -> None:
    env, retrieval, _ = stack
    code, out, _ = await memex(env, "inbox", "--all")
    assert code == 0 and "inbox:inbox-1  Pay allotment rent  [pending]" in out
    assert retrieval.seen[-1].include_done
    code, out, _ = await memex(env, "inbox", "--json")
    assert json.loads(out)["items"][0]["id"] == "inbox-1"
    code, out, _ = await memex(env, "note", "ep1")
    assert code == 0 and "[[Flat Deposit]]  home/Flat Deposit.md  2026-04-28  #home" in out
    assert "Graham returned £1,030." in out
    code, out, _ = await memex(env, "note", "ep1", "--json")
    assert json.loads(out)["path"] == "home/Flat Deposit.md"
    code, _, err = await memex(env, "note", "missing")
    assert code == 4 and "NOT_FOUND" in err


async def test_search_ask_and_note_as_of_a_day(stack: Any) -> None:
    """docs/as-of.md: --as-of goes to the orchestrator; an answer says the day on its first line;
    a note lists its versions."""
    env, reads, orchestrator = stack
    code, _, _ = await memex(env, "search", "deposit", "--as-of", "2026-02-01", "--tenant", "t1")
    assert code == 0
    assert (reads.seen[-1].filters.as_of, reads.seen[-1].tenant) == ("2026-02-01", "t1")
    code, out, _ = await memex(env, "ask", "How much?", "--as-of", "2026-02-01", "--tenant", "t1")
    assert code == 0
    assert out.startswith("As of 2026-02-01:\n£1,030 came back.\n"), out
    assert (orchestrator.asks[-1].as_of, orchestrator.asks[-1].tenant) == ("2026-02-01", "t1")
    code, out, _ = await memex(env, "ask", "How much?", "--as-of", "2026-02-01", "--json")
    assert json.loads(out)["as_of"] == "2026-02-01"
    code, out, _ = await memex(env, "ask", "How much?")
    assert "As of" not in out and orchestrator.asks[-1].as_of == ""

    code, out, _ = await memex(env, "note", "ep1")
    assert code == 0
    assert "Versions (docs/as-of.md):\n" in out
    assert "  v1 2026-01-10T12:00:00Z to 2026-03-01T12:00:00Z  ep1@v1\n" in out
    assert "  v2 2026-03-01T12:00:00Z to now  ep1 (current)\n" in out
    code, out, _ = await memex(env, "note", "ep1@v1")
    assert code == 0 and "ep1@v1 (shown)" in out and reads.seen[-1].episode_id == "ep1@v1"
    code, out, _ = await memex(env, "note", "ep1", "--json")
    versions = json.loads(out)["versions"]
    assert [(v["episode_id"], v["number"], v["valid_to"]) for v in versions] == [
        ("ep1@v1", 1, "2026-03-01T12:00:00Z"),
        ("ep1", 2, ""),
    ]


async def test_ask_renders_support_labels(stack: Any) -> None:
    env, _, _ = stack
    code, out, _ = await memex(env, "ask", "How much came back?")
    assert code == 0
    assert '[1] [[Flat Deposit]] (verbatim) "£1,030"' in out
    assert "[2] events:ev-1 (paraphrase)" in out
    assert "[3] [[Journal]] (reading between the lines)" in out
    code, out, _ = await memex(env, "ask", "q", "--json")
    assert json.loads(out)["citations"][2]["support"] == "SUPPORT_INFERENCE"
    code, _, err = await memex(env, "ask", "q", "--limit", "-1")
    assert code == 2 and "limit" in err
    code, _, _ = await memex(env, "ask", "   ")
    assert code == 2


async def test_ask_and_chat_use_sensitive_notes_only_when_told_as_reads_do(stack: Any) -> None:
    env, _, orchestrator = stack
    assert (await memex(env, "ask", "q", "--json"))[0] == 0
    assert (await memex(env, "chat", "hi", "--json"))[0] == 0
    assert not orchestrator.asks[-1].include_sensitive
    assert not orchestrator.chats[-1].include_sensitive
    assert (await memex(env, "ask", "q", "--json", "--include-sensitive"))[0] == 0
    assert (await memex(env, "chat", "--include-sensitive", stdin="one\ntwo\n"))[0] == 0
    assert orchestrator.asks[-1].include_sensitive
    assert [c.include_sensitive for c in orchestrator.chats[-2:]] == [True, True]


async def test_chat_session_streams_and_keeps_the_conversation(stack: Any) -> None:
    env, _, orchestrator = stack
    code, out, _ = await memex(env, "chat", stdin="hello\n\n/new\nagain\nthird\n/exit\nignored\n")
    assert code == 0
    assert out.count("Sources:") == 3
    assert "You said: hello" in out and "(reading between the lines)" in out
    assert [c.message for c in orchestrator.chats] == ["hello", "again", "third"]
    # /new starts over; otherwise each turn continues the conversation the server named.
    assert [c.conversation_id for c in orchestrator.chats] == ["", "", "conv-2"]
    code, out, _ = await memex(env, "chat", "one shot", "--json")
    assert code == 0
    turn = json.loads(out)
    assert turn["reply"] == "You said: one shot"
    assert [c["support_label"] for c in turn["citations"]] == [
        "verbatim",
        "paraphrase",
        "reading between the lines",
    ]


@pytest.mark.parametrize(
    ("name", "exit_code"),
    [("UNAVAILABLE", 3), ("NOT_FOUND", 4), ("DEADLINE_EXCEEDED", 5), ("INTERNAL", 1)],
)
async def test_a_chat_error_event_is_shown_by_name_and_sets_the_exit_code(
    stack: Any, name: str, exit_code: int
) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "chat", f"error:{name}")
    assert code == exit_code, err
    assert f"[error: {name}: as asked]" in err
    code, out, _ = await memex(env, "chat", f"error:{name}", "--json")
    assert code == exit_code
    assert json.loads(out)["error_code"] == name


@pytest.mark.parametrize(
    "args",
    [
        ["query", "events"],
        ["timeline", "graham"],
        ["inbox"],
        ["note", "ep1"],
        ["search", "x"],
        ["ask", "q"],
        ["chat", "hi"],
        ["conversations", "--json"],
    ],
)
async def test_every_read_command_says_start_memex_when_it_is_down(
    tmp_path: Path, args: list[str]
) -> None:
    ports = {
        f"MEMEX_{n}_PORT": str(p)
        for n, p in zip(("RETRIEVAL", "ORCHESTRATOR"), free_ports(2), strict=True)
    }
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), **ports}
    code, out, err = await memex(env, *args)
    assert code == 3, err
    assert "memex isn't running" in err and "`memex up`" in err
    assert out == ""


async def on_terminal(env: dict[str, str], *args: str, typed: bytes = b"") -> tuple[int, str]:
    """Runs memex with a terminal for stdin, stdout and stderr; its exit code and the screen."""
    master, slave = pty.openpty()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memex.gateway.cli", *args, env=env, stdin=slave, stdout=slave, stderr=slave,
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


async def test_chat_on_a_terminal_prompts_and_streams(stack: Any) -> None:
    env, _, orchestrator = stack
    code, screen = await on_terminal(env, "chat", "--persona", "coach", typed=b"hello\n/exit\n")
    assert code == 0
    assert "memex chat (coach)" in screen and "/new" in screen
    assert "you> " in screen
    assert "memex> You said: hello" in screen
    assert "(reading between the lines)" in screen
    assert [c.persona for c in orchestrator.chats] == ["coach"]


async def test_ask_on_a_terminal_shows_the_draft_then_what_the_check_changed(stack: Any) -> None:
    env, _, _ = stack
    code, screen = await on_terminal(env, "ask", "How much came back?")
    assert code == 0
    assert screen.count("£1,030 came back.") == 1  # the draft stood: not printed twice
    assert "could not check" not in screen and "checked against" not in screen
    assert '[1] [[Flat Deposit]] (verbatim) "£1,030"' in screen
    code, screen = await on_terminal(env, "ask", "unsure")
    assert code == 0
    _, _, checked = screen.partition("Maybe £900, see [[Diary]].\n")
    assert checked, screen
    assert checked.startswith(
        "\n— memex could not check that against your notes:\n" + ABSTENTION + "\n"
    ), checked
    assert "dropped from the draft, naming nothing memex showed the model: [[Diary]]" in checked
    assert "abstained" in checked
    code, screen = await on_terminal(env, "ask", "second look")
    assert code == 0
    set_aside = "I don't know.\n— that draft is set aside (reading all 3 sources)\n"
    assert set_aside + "£1,030 came back.\n" in screen, screen
    assert "checked against" not in screen  # the new draft stood
    code, screen = await on_terminal(env, "ask", "How much came back?", "--as-of", "2026-02-01")
    assert code == 0 and "As of 2026-02-01:\n£1,030 came back." in screen, screen
    code, screen = await on_terminal(env, "ask", "cut off")
    assert code == 1
    assert "£1,030 came back.\n" in screen and "unfinished draft" in screen
    assert "the answer ended before it was finished" in screen


async def test_ask_piped_prints_only_the_checked_answer(stack: Any) -> None:
    env, _, _ = stack
    code, out, err = await memex(env, "ask", "unsure")
    assert code == 0
    assert out == ABSTENTION + "\n"  # no draft, no notes on it: what a script should read
    assert "abstained" in err
    code, out, _ = await memex(env, "ask", "unsure", "--json")
    reply = json.loads(out)
    assert reply["answer"] == ABSTENTION and reply["abstained"] is True
    code, out, _ = await memex(env, "ask", "How much came back?")
    assert out.startswith("£1,030 came back.\n\nSources:\n")


async def test_ask_falls_back_to_the_one_shot_call_on_an_older_stack(stack: Any) -> None:
    env, _, _ = stack
    code, out, _ = await memex(env, "ask", "old stack")
    assert code == 0 and out.startswith("£1,030 came back.")
    code, _, err = await memex(env, "ask", "cut off")
    assert code == 1 and "the answer ended before it was finished" in err


def test_explain_shows_a_rerank_when_one_ran() -> None:
    plain = format_item(1, SearchHit.from_proto(ITEM), explain=True)
    assert "= 0.02970" in plain and "reranked" not in plain
    reranked = opb.MemoryItem()
    reranked.CopyFrom(ITEM)
    reranked.rerank_score, reranked.score = 4.25, 0.8
    hit = SearchHit.from_proto(reranked)
    assert hit.rerank_score == 4.25 and SearchHit.from_proto(ITEM).rerank_score is None
    text = format_item(1, hit, explain=True)
    assert "vector #2 (0.7)" in text and "fused 0.03000 x recency 0.900" in text
    assert "reranked: model 4.25 -> 0.80000" in text


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
async def test_a_stage_behind_a_running_orchestrator_failing_is_not_called_memex_down(
    stack: Any, json_flag: list[str]
) -> None:
    env, _, _ = stack
    code, _, err = await memex(env, "ask", "reasoner down", *json_flag)
    assert code == 3, err
    assert "UNAVAILABLE: the reasoner: GOAWAY received" in err
    assert "isn't running" not in err

"""Stand-ins for the orchestrator and retrieval services, for unit tests of the gateway.

They are real gRPC servicers (served in-process on port 0 behind memex's own interceptor), holding
their state in memory; the real services are exercised by the end-to-end tests. A few magic
inputs make them fail in chosen ways.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import grpc
from google.protobuf import json_format

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2_grpc
from memex.shared.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied

from .fake_beliefs import FakeBeliefs

Context = grpc.aio.ServicerContext[Any, Any]
# How a streaming handler learns its call was cancelled: CancelledError while it awaits, but
# GeneratorExit at its `yield` when grpc.aio was cancelled while sending the last message (the
# handler task dies outside the generator, which is then closed).
STREAM_CANCELLED = (asyncio.CancelledError, GeneratorExit)
STAMP = "2026-03-01T10:00:00Z"
CITATION = common_pb2.Citation(
    ref="[[Flat lease]]",
    item_id="chunk-1",
    episode_id="ep-1",
    quote="return £1,030",
    support=common_pb2.SUPPORT_VERBATIM,
    path="home/Flat lease.md",
)
ITEM = pb.MemoryItem(
    id="chunk-1",
    kind=pb.ITEM_KIND_CHUNK,
    text="Graham agreed to return £1,030 of the deposit.",
    citation="[[Flat lease]]",
    provenance=common_pb2.Provenance(episode_id="ep-1", date="2026-02-01", title="Flat lease"),
    channel_scores=[common_pb2.ChannelScore(channel=common_pb2.CHANNEL_VECTOR, rank=1, score=0.9)],
    score=0.5,
)
REPLY = ["Graham returned ", "£1,030 ", "of the deposit."]
ANSWER_DRAFT = ["Graham returned ", "£1,030", "."]
LOGGED_ASKS = [
    pb.LoggedAsk(
        turn_id="turn-ask-2",
        question="How much did Graham return?",
        persona="analyst",
        model="fake",
        prompt_version="v1",
        answer="Graham returned £1,030.",
        cited_refs=["[[Flat lease]]"],
        latency_ms=12.5,
        created_at=STAMP,
    ),
    pb.LoggedAsk(
        turn_id="turn-ask-1",
        question="Where is the spare key?",
        persona="analyst",
        model="fake",
        prompt_version="v1",
        answer="I could not ground an answer to this in your notes, so I won't guess.",
        abstained=True,
        latency_ms=9.0,
        created_at=STAMP,
    ),
]

# The evidence bundle of the fake ask (turn_id "turn-ask"): one plain excerpt, one sensitive.
EVIDENCE: dict[str, Any] = {
    "format": "memex-evidence/1",
    "turn_id": "turn-ask",
    "kind": "ask",
    "created_at": STAMP,
    "question": "How much did Graham return?",
    "answer": "Graham returned £1,030.",
    "abstained": False,
    "model": "fake",
    "prompt_version": "v1",
    "persona": "analyst",
    "as_of": "",
    "conversation_id": "",
    "message_id": "",
    "thread_id": "",
    "reply_turn_id": "",
    "asked_as": "",
    "excerpts": [
        {
            "number": n, "ref": ref, "kind": "chunk", "item_id": f"chunk-{n}",
            "episode_id": f"ep-{n}", "title": ref[2:-2], "path": f"home/{ref[2:-2]}.md",
            "heading": "", "date": "2026-02-01", "collection": "", "sensitive": n == 2,
            "cited": n == 1, "text": text, "excerpt_sha256": "0" * 64, "note_version": "f" * 64,
            "chunk_start": 0, "chunk_end": len(text),
        }
        for n, ref, text in [
            (1, "[[Flat lease]]", "Graham agreed to return £1,030 of the deposit."),
            (2, "[[Therapy notes]]", "Talked about the flat."),
        ]
    ],
    "citations": [
        {
            "ref": "[[Flat lease]]", "item_id": "chunk-1", "episode_id": "ep-1",
            "path": "home/Flat lease.md", "quote": "return £1,030", "support": "verbatim",
            "source": 1,
        }
    ],
    "grounding": {"cited": 1, "grounded": 1, "score": 1.0, "dropped": []},
    "claim_check": {
        "specifics": [{"text": "£1,030", "kind": "figure", "verdict": "supported",
                       "ref": "[[Flat lease]]"}],
        "dropped_claims": [],
    },
    "left_out": {"excerpts": 0, "citations": 0, "answer": False},
}  # fmt: skip


PERSONAS = pb.ListPersonasResponse(
    personas=[
        pb.Persona(
            name="analyst",
            description="Cited, careful answers.",
            default_for_ask=True,
            chunks=10,
            channels=[common_pb2.CHANNEL_VECTOR, common_pb2.CHANNEL_KEYWORD],
            stages=["plan", "retrieve", "synthesize", "ground_check"],
            model_calls=2,
            system_prompt="Answer from the notes.",
        ),
        pb.Persona(
            name="friend",
            description="Warm and brief.",
            default_for_chat=True,
            chunks=12,
            channels=[common_pb2.CHANNEL_VECTOR],
            stages=["retrieve", "synthesize"],
            model_calls=1,
            system_prompt="Be kind.",
        ),
        pb.Persona(
            name="historian",
            description="A user's own persona: dates first.",
            chunks=15,
            channels=[common_pb2.CHANNEL_VECTOR, common_pb2.CHANNEL_OBSERVATIONS],
            time_window_days=365,
            stages=["retrieve", "synthesize"],
            model_calls=1,
            system_prompt="Dates first.",
        ),
    ],
    default_ask="analyst",
    default_chat="friend",
)


# A day the fakes refuse as the orchestrator refuses a day after today (docs/as-of.md).
FUTURE = "2999-01-01"


def _check_as_of(as_of: str) -> None:
    if as_of == FUTURE:
        raise InvalidArgument(
            f"as_of {as_of} is in the future: leave it out to read memory as it stands now"
        )


def _ask_response(request: pb.AskRequest) -> pb.AskResponse:
    return pb.AskResponse(
        as_of=request.as_of,
        answer="".join(ANSWER_DRAFT),
        citations=[CITATION],
        persona=request.persona or "analyst",
        grounding=pb.GroundingReport(cited=1, grounded=1, score=1.0),
        stages=["plan", "retrieve", "synthesize", "ground_check"],
        model="fake",
        latency_ms=12.5,
        turn_id="turn-ask",
    )


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
        if request.collection not in ("inbox", "entities", "events"):
            raise PermissionDenied(f"collection {request.collection!r} is not allowlisted")
        if request.collection != "inbox":
            return pb.QueryRecordsResponse()
        return pb.QueryRecordsResponse(records=[_record("inbox", f) for f in self.INBOX])

    async def PersonTimeline(
        self, request: pb.PersonTimelineRequest, context: Context
    ) -> pb.PersonTimelineResponse:
        self.reads.append(request)
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


class FakeOrchestrator(FakeBeliefs, MemoryReads, orchestrator_pb2_grpc.OrchestratorServiceServicer):
    """Conversations, threads and turns in memory; chat replies from a script.

    Personas: analyst (ask default), friend (chat default) and a user's own, historian.

    Magic inputs: an ask or a search as of ``FUTURE`` is refused as the orchestrator refuses a
    day after today; an ask question ``status:NAME`` aborts with that gRPC status, and ``slow``
    waits until cancelled (setting ``ask_cancelled``), before any event when streamed. A
    streamed ask also takes ``fail after`` (started, a word, then UNAVAILABLE), ``second look``
    (a first draft set aside by a redraft, then the answer) and ``slow words`` (started, then
    words until cancelled, setting ``ask_cancelled``). A chat message ``fail
    before`` is refused before the first event, ``fail after`` fails mid-stream, ``slow`` streams
    until cancelled (setting ``cancelled``), ``idle`` waits a second before replying.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ids = itertools.count(1)
        self.conversations: dict[str, pb.Conversation] = {}
        self.messages: dict[str, list[pb.ConversationMessage]] = {}
        self.threads: dict[str, pb.Thread] = {}
        self.turns: dict[str, pb.Turn] = {}
        # Set when the thread is deleted, ending its watches.
        self.thread_gone: dict[str, asyncio.Event] = {}
        self.chat_requests: list[pb.ChatRequest] = []
        self.ask_requests: list[pb.AskRequest] = []  # Ask's and AskStream's
        self.turn_requests: list[pb.CreateTurnRequest] = []
        # GetConversation and ListTurns requests: replays of stored answers (issue 11).
        self.replay_requests: list[pb.GetConversationRequest | pb.ListTurnsRequest] = []
        self.request_ids: list[str] = []
        self.evidence_requests: list[pb.GetEvidenceRequest] = []
        self.cancelled = threading.Event()
        self.ask_cancelled = threading.Event()
        self.forgotten = False

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.ids)}"

    def _note_request_id(self, context: Context) -> None:
        for key, value in context.invocation_metadata() or ():
            if key == "x-request-id":
                self.request_ids.append(str(value))

    async def _ask_magic(self, request: pb.AskRequest, context: Context) -> None:
        """What Ask and AskStream do before their first word."""
        self._note_request_id(context)
        self.ask_requests.append(request)
        _check_as_of(request.as_of)
        if request.question.startswith("status:"):
            await context.abort(grpc.StatusCode[request.question[7:]], "as asked")
        if request.question == "slow":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.ask_cancelled.set()
                raise

    async def Ask(self, request: pb.AskRequest, context: Context) -> pb.AskResponse:
        await self._ask_magic(request, context)
        return _ask_response(request)

    async def AskStream(
        self, stream_request: pb.AskStreamRequest, context: Context
    ) -> AsyncIterator[pb.AskStreamResponse]:
        request = stream_request.ask
        await self._ask_magic(request, context)
        persona = request.persona or "analyst"
        yield pb.AskStreamResponse(
            started=pb.AskStarted(
                model="fake", persona=persona, sources=[CITATION.ref], source_paths=[CITATION.path]
            )
        )
        if request.question == "fail after":
            yield pb.AskStreamResponse(delta="Half a ")
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reasoner gone")
        if request.question == "second look":
            yield pb.AskStreamResponse(delta="I don't know.")
            yield pb.AskStreamResponse(redraft=pb.AskRedraft(reason="reading all 4 sources"))
        if request.question == "slow words":
            try:
                for n in range(100_000):
                    yield pb.AskStreamResponse(delta=f"{n} ")
                    await asyncio.sleep(0.02)
            except STREAM_CANCELLED:
                self.ask_cancelled.set()
                raise
        for piece in ANSWER_DRAFT:
            yield pb.AskStreamResponse(delta=piece)
        yield pb.AskStreamResponse(result=_ask_response(request))

    async def ListLoggedAsks(
        self, request: pb.ListLoggedAsksRequest, context: Context
    ) -> pb.ListLoggedAsksResponse:
        return pb.ListLoggedAsksResponse(asks=LOGGED_ASKS[: request.limit or None])

    async def Chat(
        self, request: pb.ChatRequest, context: Context
    ) -> AsyncIterator[pb.ChatResponse]:
        self.chat_requests.append(request)
        if request.message == "fail before":
            raise InvalidArgument("the message was refused as asked")
        conversation_id = request.conversation_id
        if conversation_id and conversation_id not in self.conversations:
            raise NotFound(f"no conversation {conversation_id!r}")
        if not conversation_id:
            conversation_id = self._id("conv")
            self.conversations[conversation_id] = pb.Conversation(
                id=conversation_id,
                title=request.message[:60],
                persona=request.persona or "friend",
                created_at=STAMP,
                updated_at=STAMP,
            )
            self.messages[conversation_id] = []
        meta = pb.ChatMeta(
            conversation_id=conversation_id, model="fake", persona=request.persona or "friend"
        )
        yield pb.ChatResponse(meta=meta)
        if request.message == "fail after":
            yield pb.ChatResponse(delta="Half a ")
            yield pb.ChatResponse(
                error=pb.ChatError(code=pb.CHAT_ERROR_CODE_UNAVAILABLE, message="reasoner gone")
            )
            return
        if request.message == "slow":
            try:
                for n in range(100_000):
                    yield pb.ChatResponse(delta=f"{n} ")
                    await asyncio.sleep(0.02)
            except STREAM_CANCELLED:
                self.cancelled.set()
                raise
        if request.message == "idle":
            await asyncio.sleep(1.0)
        for piece in REPLY:
            yield pb.ChatResponse(delta=piece)
        yield pb.ChatResponse(citations=pb.ChatCitations(citations=[CITATION], withheld=1))
        message_id = self._id("msg")
        self.messages[conversation_id] += [
            pb.ConversationMessage(
                id=self._id("msg"), role=pb.MESSAGE_ROLE_USER, text=request.message
            ),
            pb.ConversationMessage(
                id=message_id,
                role=pb.MESSAGE_ROLE_ASSISTANT,
                text="".join(REPLY),
                citations=[CITATION],
                model="fake",
            ),
        ]
        self.conversations[conversation_id].message_count += 2
        yield pb.ChatResponse(
            done=pb.ChatDone(message_id=message_id, latency_ms=3.0, chunks_considered=1)
        )

    async def ListPersonas(
        self, request: pb.ListPersonasRequest, context: Context
    ) -> pb.ListPersonasResponse:
        return PERSONAS

    async def Search(self, request: pb.SearchRequest, context: Context) -> pb.SearchResponse:
        self.reads.append(request)
        _check_as_of(request.filters.as_of)
        return pb.SearchResponse(items=[ITEM], turn_id="turn-search")

    async def ListConversations(
        self, request: pb.ListConversationsRequest, context: Context
    ) -> pb.ListConversationsResponse:
        found = list(self.conversations.values())[: request.limit or None]
        return pb.ListConversationsResponse(conversations=found)

    def _conversation(self, conversation_id: str) -> pb.Conversation:
        if conversation_id not in self.conversations:
            raise NotFound(f"no conversation {conversation_id!r}")
        return self.conversations[conversation_id]

    async def GetConversation(
        self, request: pb.GetConversationRequest, context: Context
    ) -> pb.GetConversationResponse:
        self.replay_requests.append(request)
        conversation = self._conversation(request.conversation_id)
        return pb.GetConversationResponse(
            conversation=conversation, messages=self.messages[conversation.id]
        )

    async def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: Context
    ) -> pb.DeleteConversationResponse:
        self._conversation(request.conversation_id)
        del self.conversations[request.conversation_id]
        return pb.DeleteConversationResponse()

    async def CreateTurn(
        self, request: pb.CreateTurnRequest, context: Context
    ) -> pb.CreateTurnResponse:
        self.turn_requests.append(request)
        thread_id = request.thread_id
        if thread_id and thread_id not in self.threads:
            raise NotFound(f"no thread {thread_id!r}")
        if not thread_id:
            thread_id = self._id("thread")
            self.threads[thread_id] = pb.Thread(
                id=thread_id, title=request.text[:60], created_at=STAMP
            )
        turn = pb.Turn(
            id=self._id("turn"),
            thread_id=thread_id,
            role=pb.MESSAGE_ROLE_USER,
            text=request.text,
            state=pb.TURN_STATE_PENDING,
            created_at=STAMP,
        )
        self.turns[turn.id] = turn
        return pb.CreateTurnResponse(turn=turn)

    async def GetTurn(self, request: pb.GetTurnRequest, context: Context) -> pb.GetTurnResponse:
        if request.turn_id not in self.turns:
            raise NotFound(f"no turn {request.turn_id!r}")
        return pb.GetTurnResponse(turn=self.turns[request.turn_id])

    async def ListThreads(
        self, request: pb.ListThreadsRequest, context: Context
    ) -> pb.ListThreadsResponse:
        return pb.ListThreadsResponse(threads=list(self.threads.values()))

    async def ListTurns(
        self, request: pb.ListTurnsRequest, context: Context
    ) -> pb.ListTurnsResponse:
        self.replay_requests.append(request)
        if request.thread_id not in self.threads:
            raise NotFound(f"no thread {request.thread_id!r}")
        turns = [t for t in self.turns.values() if t.thread_id == request.thread_id]
        return pb.ListTurnsResponse(turns=turns)

    async def WatchThread(
        self, request: pb.WatchThreadRequest, context: Context
    ) -> AsyncIterator[pb.WatchThreadResponse]:
        """The thread's turns, then as a worker would: each pending question thinking, then
        answered with its answer; then nothing until the thread is deleted, which ends it."""
        if not request.thread_id:
            raise InvalidArgument("thread_id is empty")
        if request.thread_id not in self.threads:
            raise NotFound(f"no thread {request.thread_id!r}")
        turns = [t for t in self.turns.values() if t.thread_id == request.thread_id]
        for turn in turns:
            yield pb.WatchThreadResponse(turn=turn, current=True)
        for turn in turns:
            if turn.state != pb.TURN_STATE_PENDING:
                continue
            for state in (pb.TURN_STATE_THINKING, pb.TURN_STATE_ANSWERED):
                changed = pb.Turn()
                changed.CopyFrom(turn)
                changed.state = state
                self.turns[turn.id] = turn = changed
                yield pb.WatchThreadResponse(turn=turn)
            answer = pb.Turn(
                id=self._id("turn"),
                thread_id=turn.thread_id,
                role=pb.MESSAGE_ROLE_ASSISTANT,
                text=f"An answer to {turn.text!r}.",
                state=pb.TURN_STATE_ANSWERED,
                created_at=STAMP,
            )
            self.turns[answer.id] = answer
            yield pb.WatchThreadResponse(turn=answer)
        gone = self.thread_gone.setdefault(request.thread_id, asyncio.Event())
        if request.thread_id in self.threads:
            await gone.wait()

    async def DeleteThread(
        self, request: pb.DeleteThreadRequest, context: Context
    ) -> pb.DeleteThreadResponse:
        if request.thread_id not in self.threads:
            raise NotFound(f"no thread {request.thread_id!r}")
        del self.threads[request.thread_id]
        if (watched := self.thread_gone.pop(request.thread_id, None)) is not None:
            watched.set()
        gone = [t for t in self.turns.values() if t.thread_id == request.thread_id]
        for turn in gone:
            del self.turns[turn.id]
        return pb.DeleteThreadResponse(turns_deleted=len(gone))

    async def GetEvidence(
        self, request: pb.GetEvidenceRequest, context: Context
    ) -> pb.GetEvidenceResponse:
        """Knows the fake ask's bundle (``EVIDENCE``); its sensitive excerpt is a placeholder
        unless asked for, as the orchestrator's read policy has it."""
        self.evidence_requests.append(request)
        if not request.turn_id.strip():
            raise InvalidArgument("turn_id is empty: give the answer's id")
        if request.turn_id not in (EVIDENCE["turn_id"], "turn-as-of"):
            raise NotFound(f"no evidence bundle for answer {request.turn_id!r}")
        bundle = dict(EVIDENCE)
        if request.turn_id == "turn-as-of":  # an ask as of a day (docs/as-of.md)
            bundle.update(turn_id="turn-as-of", as_of="2026-02-01")
        left = 0 if request.include_sensitive else 1
        if left:
            bundle["excerpts"] = [
                {"number": 2, "left_out": "sensitive"} if e["sensitive"] else e
                for e in EVIDENCE["excerpts"]
            ]
            bundle["left_out"] = {"excerpts": 1, "citations": 0, "answer": True}
            bundle["answer"] = "(This reply drew on sensitive notes.)"
        return pb.GetEvidenceResponse(
            turn_id=bundle["turn_id"], bundle_json=json.dumps(bundle), left_out=left
        )

    async def ForgetNote(
        self, request: pb.ForgetNoteRequest, context: Context
    ) -> pb.ForgetNoteResponse:
        """Knows one note, ``ep-1`` ([[Flat lease]], also by path and title), until forgotten;
        the note ``leaky`` (``ep-leaky``) is forgotten incompletely (a chunk remains)."""
        names = {"ep-1", "Flat lease", "home/Flat lease.md", "leaky", "ep-leaky"}
        leaky = request.note in ("leaky", "ep-leaky")
        if not request.note.strip():
            raise InvalidArgument("name the note to forget: its episode id, vault path or title")
        if request.note not in names or (self.forgotten and not leaky):
            raise NotFound(f"no note has the episode id, vault path or title {request.note!r}")
        done = not request.dry_run
        left = int(leaky and done)
        if done and not leaky:
            self.forgotten = True
        return pb.ForgetNoteResponse(
            episode_id="ep-leaky" if leaky else "ep-1",
            title="Flat lease",
            path="home/Flat lease.md",
            counts=[
                pb.ForgetCount(
                    store="retrieval (fake)", what="chunks", removed=2 - left,
                    remaining=left if done else 2,
                ),
                pb.ForgetCount(
                    store="telemetry", what="turns quoting or citing it", removed=1,
                    remaining=0 if done else 1,
                ),
            ],
            checks=[
                pb.ForgetCheck(
                    store="retrieval (fake)", description="lookup by episode id",
                    found_before=1, found_after=int(not done),
                )
            ],
            file_present=True,
            tombstoned=done,
            dry_run=request.dry_run,
            complete=done and not left,
            conversations_citing=["conv-9"],
            scrubbed=done,
        )  # fmt: skip


class FakeRetrieval(retrieval_pb2_grpc.RetrievalServiceServicer):
    """The retrieval service the gateway no longer calls: every method says so."""

    async def _unused(self, request: Any, context: Context) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "the gateway does not call this")

    Search = UpsertRecords = DeleteRecords = QueryRecords = PersonTimeline = _unused
    ListInbox = GetNote = DeleteNote = ListNotes = _unused
    IndexVault = ReadNoteFile = _unused  # type: ignore[assignment]

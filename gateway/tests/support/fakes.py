"""Stand-ins for the orchestrator and retrieval services, for unit tests of the gateway.

They are real gRPC servicers (served in-process on port 0 behind memex's own interceptor), holding
their state in memory; the real services are exercised by the end-to-end tests. A few magic
inputs make them fail in chosen ways. The orchestrator's asks, memory reads and beliefs are its
parts (``fake_asks``, ``fake_reads``, ``fake_beliefs``); what they answer with is ``fake_data``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import grpc

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2_grpc
from memex.shared.errors import InvalidArgument, NotFound

from .fake_asks import FakeAsks
from .fake_beliefs import FakeBeliefs
from .fake_data import (
    CITATION,
    EVIDENCE,
    ITEM,
    PERSONAS,
    REPLY,
    STAMP,
    STREAM_CANCELLED,
    Context,
    check_as_of,
)
from .fake_reads import MemoryReads


class FakeOrchestrator(
    FakeAsks, FakeBeliefs, MemoryReads, orchestrator_pb2_grpc.OrchestratorServiceServicer
):
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
        self.turn_requests: list[pb.CreateTurnRequest] = []
        # GetConversation and ListTurns requests: replays of stored answers (issue 11).
        self.replay_requests: list[pb.GetConversationRequest | pb.ListTurnsRequest] = []
        self.evidence_requests: list[pb.GetEvidenceRequest] = []
        self.cancelled = threading.Event()
        self.forgotten = False

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.ids)}"

    async def Chat(
        self, request: pb.ChatRequest, context: Context
    ) -> AsyncIterator[pb.ChatResponse]:
        self.chat_requests.append(request)
        if request.message == "fail before":
            raise InvalidArgument("the message was refused as asked")
        check_as_of(request.as_of)
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
            conversation_id=conversation_id,
            model="fake",
            persona=request.persona or "friend",
            as_of=request.as_of,
        )
        yield pb.ChatResponse(meta=meta)
        if request.message == "fail after":
            yield pb.ChatResponse(delta="Half a ")
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reasoner gone")
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
        check_as_of(request.filters.as_of)
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

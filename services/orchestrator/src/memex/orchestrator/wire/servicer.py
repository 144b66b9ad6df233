"""Proto ⇄ domain translation for the orchestrator service."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from memex.orchestrator.ask import events as ask_events
from memex.orchestrator.conversation import chat as chat_events
from memex.orchestrator.memory.forget import NoteReceipt
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.turn.persona import Persona, Personas
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.orchestrator.wire.answers_pb import (
    ask_pb,
    citations_pb,
    conversation_pb,
    logged_ask_pb,
    message_pb,
    thread_pb,
    turn_pb,
)
from memex.orchestrator.wire.beliefs_servicer import BeliefsServicer
from memex.orchestrator.wire.reads_servicer import ReadsServicer
from memex.shared.channels import CHANNELS
from memex.shared.errors import InvalidArgument
from memex.shared.server import EngineSlot

Context = grpc.aio.ServicerContext[Any, Any]


def persona_pb(persona: Persona, personas: Personas) -> pb.Persona:
    """A loaded persona on the wire, marked when it is a default."""
    return pb.Persona(
        name=persona.name,
        description=persona.description,
        default_for_ask=persona.name == personas.default_ask,
        default_for_chat=persona.name == personas.default_chat,
        chunks=persona.chunks,
        channels=[CHANNELS[c] for c in persona.channels],
        time_window_days=persona.time_window_days,
        include_contested=persona.include_contested,
        observation_weight=persona.observation_weight,
        stages=list(persona.stages),
        model_calls=persona.model_calls,
        system_prompt=persona.system_prompt,
    )


def receipt_pb(r: NoteReceipt) -> pb.ForgetNoteResponse:
    """A note forget's receipt on the wire."""
    return pb.ForgetNoteResponse(
        episode_id=r.episode_id,
        title=r.title,
        path=r.path,
        counts=[
            pb.ForgetCount(store=c.store, what=c.what, removed=c.removed, remaining=c.remaining)
            for c in r.counts
        ],
        checks=[
            pb.ForgetCheck(
                store=c.store,
                description=c.description,
                found_before=c.found_before,
                found_after=c.found_after,
            )
            for c in r.checks
        ],
        file_present=r.file_present,
        tombstoned=r.tombstoned,
        dry_run=r.dry_run,
        complete=r.complete,
        conversations_citing=r.conversations_citing,
        threads_citing=r.threads_citing,
        scrubbed=r.scrubbed,
    )


class OrchestratorServicer(
    BeliefsServicer, ReadsServicer, orchestrator_pb2_grpc.OrchestratorServiceServicer
):
    """Implements memex.orchestrator.v1.OrchestratorService (the belief RPCs in
    ``wire/beliefs_servicer.py``, the reads of memory in ``wire/reads_servicer.py``)."""

    def __init__(self, slot: EngineSlot[Orchestrator]) -> None:
        self._slot = slot

    async def Ask(self, request: pb.AskRequest, context: Context) -> pb.AskResponse:
        o = self._slot.get()
        r = await o.asker.ask(
            o.tenant(request.tenant),
            request.question,
            request.persona,
            request.limit,
            include_sensitive=request.include_sensitive,
            as_of=request.as_of,
        )
        return ask_pb(r)

    async def AskStream(
        self, request: pb.AskStreamRequest, context: Context
    ) -> AsyncIterator[pb.AskStreamResponse]:
        o = self._slot.get()
        ask = request.ask
        stream = o.asker.stream(
            o.tenant(ask.tenant),
            ask.question,
            ask.persona,
            ask.limit,
            include_sensitive=ask.include_sensitive,
            as_of=ask.as_of,
        )
        # Closed at once when the client goes away, so the model call below it stops too.
        async with contextlib.aclosing(stream):
            async for event in stream:
                match event:
                    case ask_events.Started():
                        yield pb.AskStreamResponse(
                            started=pb.AskStarted(
                                model=event.model,
                                persona=event.persona,
                                sources=event.sources,
                                source_paths=event.source_paths,
                            )
                        )
                    case ask_events.Draft():
                        yield pb.AskStreamResponse(delta=event.text)
                    case ask_events.Redraft():
                        yield pb.AskStreamResponse(redraft=pb.AskRedraft(reason=event.reason))
                    case ask_events.AskResult():
                        yield pb.AskStreamResponse(result=ask_pb(event))

    async def Chat(
        self, request: pb.ChatRequest, context: Context
    ) -> AsyncIterator[pb.ChatResponse]:
        o = self._slot.get()
        stream = o.chatter.chat(
            o.tenant(request.tenant),
            request.conversation_id,
            request.message,
            request.persona,
            include_sensitive=request.include_sensitive,
            as_of=request.as_of,
        )
        # Closed at once when the client goes away, so the model call below it stops too.
        async with contextlib.aclosing(stream):
            async for event in stream:
                match event:
                    case chat_events.Meta():
                        yield pb.ChatResponse(
                            meta=pb.ChatMeta(
                                conversation_id=event.conversation_id,
                                model=event.model,
                                persona=event.persona,
                                as_of=event.as_of,
                            )
                        )
                    case chat_events.Delta():
                        yield pb.ChatResponse(delta=event.text)
                    case chat_events.Citations():
                        yield pb.ChatResponse(
                            citations=pb.ChatCitations(
                                citations=citations_pb(event.citations), withheld=event.withheld
                            )
                        )
                    case chat_events.Done():
                        yield pb.ChatResponse(
                            done=pb.ChatDone(
                                message_id=event.message_id,
                                latency_ms=event.latency_ms,
                                chunks_considered=event.chunks_considered,
                            )
                        )

    async def ListConversations(
        self, request: pb.ListConversationsRequest, context: Context
    ) -> pb.ListConversationsResponse:
        o = self._slot.get()
        found = await asyncio.to_thread(
            o.store.list_conversations, o.tenant(request.tenant), request.limit or 50
        )
        return pb.ListConversationsResponse(conversations=[conversation_pb(c) for c in found])

    async def GetConversation(
        self, request: pb.GetConversationRequest, context: Context
    ) -> pb.GetConversationResponse:
        o = self._slot.get()
        conversation, messages = await o.conversation(
            o.tenant(request.tenant),
            request.conversation_id,
            include_sensitive=request.include_sensitive,
        )
        return pb.GetConversationResponse(
            conversation=conversation_pb(conversation), messages=[message_pb(m) for m in messages]
        )

    async def DeleteConversation(
        self, request: pb.DeleteConversationRequest, context: Context
    ) -> pb.DeleteConversationResponse:
        o = self._slot.get()
        await asyncio.to_thread(
            o.store.delete_conversation, o.tenant(request.tenant), request.conversation_id
        )
        return pb.DeleteConversationResponse()

    async def CreateTurn(
        self, request: pb.CreateTurnRequest, context: Context
    ) -> pb.CreateTurnResponse:
        o = self._slot.get()
        turn = await o.create_turn(
            o.tenant(request.tenant),
            request.thread_id,
            request.text,
            include_sensitive=request.include_sensitive,
            as_of=request.as_of,
        )
        return pb.CreateTurnResponse(turn=turn_pb(turn))

    async def GetTurn(self, request: pb.GetTurnRequest, context: Context) -> pb.GetTurnResponse:
        o = self._slot.get()
        turn = await asyncio.to_thread(o.store.get_turn, o.tenant(request.tenant), request.turn_id)
        return pb.GetTurnResponse(turn=turn_pb(turn))

    async def ListThreads(
        self, request: pb.ListThreadsRequest, context: Context
    ) -> pb.ListThreadsResponse:
        o = self._slot.get()
        threads = await asyncio.to_thread(
            o.store.list_threads, o.tenant(request.tenant), request.limit or 50
        )
        return pb.ListThreadsResponse(threads=[thread_pb(t) for t in threads])

    async def ListTurns(
        self, request: pb.ListTurnsRequest, context: Context
    ) -> pb.ListTurnsResponse:
        o = self._slot.get()
        turns = await o.thread_turns(
            o.tenant(request.tenant), request.thread_id, include_sensitive=request.include_sensitive
        )
        return pb.ListTurnsResponse(turns=[turn_pb(t) for t in turns])

    async def WatchThread(
        self, request: pb.WatchThreadRequest, context: Context
    ) -> AsyncIterator[pb.WatchThreadResponse]:
        o = self._slot.get()
        watch = o.watch_thread(
            o.tenant(request.tenant),
            request.thread_id,
            include_sensitive=request.include_sensitive,
        )
        # Closed at once when the client goes away, so its LISTEN connection closes too.
        async with contextlib.aclosing(watch):
            async for turn, current in watch:
                yield pb.WatchThreadResponse(turn=turn_pb(turn), current=current)

    async def ListLoggedAsks(
        self, request: pb.ListLoggedAsksRequest, context: Context
    ) -> pb.ListLoggedAsksResponse:
        o = self._slot.get()
        if request.limit < 0:
            raise InvalidArgument("limit must be >= 0")
        asks = await asyncio.to_thread(
            o.store.list_logged_asks, o.tenant(request.tenant), request.limit or 50
        )
        return pb.ListLoggedAsksResponse(asks=[logged_ask_pb(a) for a in asks])

    async def GetEvidence(
        self, request: pb.GetEvidenceRequest, context: Context
    ) -> pb.GetEvidenceResponse:
        o = self._slot.get()
        bundle, left_out = await o.evidence(
            o.tenant(request.tenant), request.turn_id, include_sensitive=request.include_sensitive
        )
        return pb.GetEvidenceResponse(
            turn_id=bundle["turn_id"],
            bundle_json=json.dumps(bundle, ensure_ascii=False, indent=2),
            left_out=left_out,
        )

    async def ListPersonas(
        self, request: pb.ListPersonasRequest, context: Context
    ) -> pb.ListPersonasResponse:
        personas = self._slot.get().personas
        return pb.ListPersonasResponse(
            personas=[persona_pb(p, personas) for p in personas.all()],
            default_ask=personas.default_ask,
            default_chat=personas.default_chat,
        )

    async def DeleteThread(
        self, request: pb.DeleteThreadRequest, context: Context
    ) -> pb.DeleteThreadResponse:
        o = self._slot.get()
        deleted, left = await o.delete_thread(o.tenant(request.tenant), request.thread_id)
        return pb.DeleteThreadResponse(turns_deleted=deleted, turns_remaining=left)

    async def ForgetNote(
        self, request: pb.ForgetNoteRequest, context: Context
    ) -> pb.ForgetNoteResponse:
        o = self._slot.get()
        receipt = await o.forget_note(o.tenant(request.tenant), request.note, request.dry_run)
        return receipt_pb(receipt)

"""A streamed reply from the orchestrator (a chat reply, or a streamed ask), as the API's events:
a model that names the SSE event it is sent as (``event``), or a ``delta``'s text.

``open_stream`` waits for the first event before anything is sent to the client, so a failure
before it (bad input, unknown conversation, a service down) becomes a plain HTTP error. After
that, a failure ends the gRPC call with its status (chat and ask alike) and reaches the client
as an ``error`` event, and the stream always ends with its terminal event
(chat: ``done``; ask: ``result``) or ``error``. Closing the iterator (the client went away)
cancels the gRPC call, which cancels the orchestrator's call to the reasoner, which stops
generating.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar, Protocol

import grpc

from memex.gateway import convert, present
from memex.gateway.errors import ApiError
from memex.gateway.models.ask import AskRedraft, AskStarted
from memex.gateway.models.chat import ChatCitations, ChatDone, ChatError, ChatMeta
from memex.gateway.models.turns import ThreadEnded, TurnEvent
from memex.orchestrator.v1 import orchestrator_pb2 as opb

log = logging.getLogger(__name__)


class EventModel(Protocol):
    """An event other than a delta: a pydantic model of ``models/`` that names its SSE event."""

    event: ClassVar[str]

    def model_dump_json(self) -> str: ...


# A ``delta`` is its text as the orchestrator sent it: the SSE frame is written from it
# (``delta_json``), with no model per token between the proto and the client.
Event = EventModel | str


def event_name(event: Event) -> str:
    """The SSE event ``event`` is sent as."""
    return "delta" if isinstance(event, str) else event.event


def delta_json(text: str) -> str:
    """A ``delta`` event's data, ``{"text":...}``, as compact as the models' JSON."""
    return json.dumps({"text": text}, ensure_ascii=False, separators=(",", ":"))


def status_code(name: str) -> grpc.StatusCode:
    """The gRPC status code called ``name`` (UNKNOWN for a name it does not know)."""
    try:
        return grpc.StatusCode[name]
    except KeyError:
        return grpc.StatusCode.UNKNOWN


def to_event(message: opb.ChatResponse) -> Event:
    """A proto chat event as the API's named event."""
    kind = message.WhichOneof("event")
    if kind == "meta":
        m = message.meta
        return ChatMeta(
            conversation_id=m.conversation_id, model=m.model, persona=m.persona, as_of=m.as_of
        )
    if kind == "delta":
        return message.delta
    if kind == "citations":
        c = message.citations
        return ChatCitations(citations=present.citations(c.citations), withheld=c.withheld)
    if kind == "done":
        d = message.done
        return ChatDone(
            message_id=d.message_id,
            latency_ms=d.latency_ms,
            chunks_considered=d.chunks_considered,
        )
    return ChatError(code="INTERNAL", message="the orchestrator sent no event")


def ask_event(message: opb.AskStreamResponse) -> Event:
    """A proto ask event as the API's named event."""
    kind = message.WhichOneof("event")
    if kind == "started":
        s = message.started
        return AskStarted(
            model=s.model,
            persona=s.persona,
            sources=list(s.sources),
            source_paths=list(s.source_paths),
        )
    if kind == "delta":
        return message.delta
    if kind == "redraft":
        return AskRedraft(reason=message.redraft.reason)
    if kind == "result":
        return convert.ask(message.result)
    return ChatError(code="INTERNAL", message="the orchestrator sent no event")


class EventStream:
    """An open streaming call whose first event has arrived."""

    def __init__(
        self,
        call: Any,
        first: Event,
        convert_event: Callable[[Any], Event],
        terminal: frozenset[str],
        end: Event | None = None,
    ) -> None:
        self._call = call
        # What a call that ends cleanly without a terminal event means (a watched thread
        # deleted); None: a reply cut short, an error.
        self._end = end
        self._first = first
        self._convert = convert_event
        self._terminal = terminal | {"error"}
        self._ended = False

    @property
    def first(self) -> Event:
        """The first event (``meta`` or ``started`` from a healthy orchestrator)."""
        return self._first

    def cancel(self) -> None:
        """Cancels the call if it still runs (idempotent)."""
        if not self._call.done():
            if not self._ended:
                log.info("the reply was abandoned (client gone or shutdown); cancelling the call")
            self._call.cancel()

    async def events(self) -> AsyncIterator[Event]:
        """Every event, the first included; ends after the terminal event or ``error``."""
        try:
            yield self._first
            self._ended = event_name(self._first) in self._terminal
            while not self._ended:
                try:
                    message = await self._call.read()
                except grpc.aio.AioRpcError as exc:
                    failure = ApiError.from_rpc(exc)
                    self._ended = True
                    yield ChatError(code=failure.code.name, message=failure.message)
                    return
                if message is grpc.aio.EOF:
                    self._ended = True
                    if self._end is not None:
                        yield self._end
                        return
                    yield ChatError(
                        code="INTERNAL", message="the reply ended before it was finished"
                    )
                    return
                event = self._convert(message)
                self._ended = event_name(event) in self._terminal
                yield event
        finally:
            # Whatever ended us (the client left, a server shutdown, the end), the call must not
            # outlive the response: cancelling it is what stops the model.
            self.cancel()


async def open_stream(
    call: Any,
    convert_event: Callable[[Any], Event],
    terminal: frozenset[str],
    end: Event | None = None,
) -> EventStream:
    """Waits for ``call``'s first event; raises ApiError for a failure before it (and cancels
    the call when the wait itself is cancelled)."""
    try:
        message = await call.read()
    except grpc.aio.AioRpcError as exc:
        raise ApiError.from_rpc(exc) from exc
    except BaseException:
        call.cancel()
        raise
    if message is grpc.aio.EOF:
        raise ApiError(grpc.StatusCode.INTERNAL, "the orchestrator ended without a reply")
    first = convert_event(message)
    if isinstance(first, ChatError):
        call.cancel()
        raise ApiError(status_code(first.code), first.message)
    return EventStream(call, first, convert_event, terminal, end)


async def open_chat(orchestrator: Any, request: opb.ChatRequest, timeout: float) -> EventStream:
    """Starts a chat and waits for its first event; raises ApiError for a failure before it."""
    call = orchestrator.Chat(request, timeout=timeout)
    return await open_stream(call, to_event, frozenset({"done"}))


async def open_ask(call: Any) -> EventStream:
    """Waits for a started AskStream ``call``'s first event (``started``); raises ApiError for
    a failure before it."""
    return await open_stream(call, ask_event, frozenset({"result"}))


def turn_event(message: opb.WatchThreadResponse) -> Event:
    """A proto thread change as the API's ``turn`` event."""
    return TurnEvent(turn=convert.turn(message.turn), current=message.current)


async def open_watch(call: Any, thread_id: str) -> EventStream:
    """Waits for a started WatchThread ``call``'s first turn; raises ApiError for a failure
    before it (404 unknown thread). A clean end is the thread deleted: ``deleted``."""
    return await open_stream(call, turn_event, frozenset(), ThreadEnded(thread_id=thread_id))

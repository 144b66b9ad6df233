"""One streamed chat reply from the orchestrator, as (event name, payload model) pairs.

``open_chat`` waits for the first event before anything is sent to the client, so a failure
before it (bad input, unknown conversation, a service down) becomes a plain HTTP error. After
that, failures arrive as an ``error`` event, and the stream always ends with ``done`` or
``error``. Closing the iterator (the client went away) cancels the gRPC call, which cancels the
orchestrator's call to the reasoner, which stops generating.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from pydantic import BaseModel

from memex.gateway import convert, models
from memex.gateway.errors import ApiError
from memex.orchestrator.v1 import orchestrator_pb2 as opb

log = logging.getLogger(__name__)

ChatEvent = tuple[str, BaseModel]


def status_code(name: str) -> grpc.StatusCode:
    """The gRPC status code called ``name`` (UNKNOWN for a name it does not know)."""
    try:
        return grpc.StatusCode[name]
    except KeyError:
        return grpc.StatusCode.UNKNOWN


def to_event(message: opb.ChatResponse) -> ChatEvent:
    """A proto chat event as the API's named event."""
    kind = message.WhichOneof("event")
    if kind == "meta":
        m = message.meta
        return "meta", models.ChatMeta(
            conversation_id=m.conversation_id, model=m.model, persona=m.persona
        )
    if kind == "delta":
        return "delta", models.ChatDelta(text=message.delta)
    if kind == "citations":
        c = message.citations
        return "citations", models.ChatCitations(
            citations=convert.citations(c.citations), withheld=c.withheld
        )
    if kind == "done":
        d = message.done
        return "done", models.ChatDone(
            message_id=d.message_id,
            latency_ms=d.latency_ms,
            chunks_considered=d.chunks_considered,
        )
    if kind == "error":
        return "error", models.ChatError(code=message.error.code, message=message.error.message)
    return "error", models.ChatError(code="INTERNAL", message="the orchestrator sent no event")


class ChatStream:
    """An open Chat call whose first event has arrived."""

    def __init__(self, call: Any, first: ChatEvent) -> None:
        self._call = call
        self._first = first
        self._ended = False

    @property
    def first(self) -> ChatEvent:
        """The first event (``meta`` from a healthy orchestrator)."""
        return self._first

    def cancel(self) -> None:
        """Cancels the call if it still runs (idempotent)."""
        if not self._call.done():
            if not self._ended:
                log.info("the reply was abandoned (client gone or shutdown); cancelling the chat")
            self._call.cancel()

    async def events(self) -> AsyncIterator[ChatEvent]:
        """Every event, the first included; ends after ``done`` or ``error``."""
        try:
            yield self._first
            while True:
                try:
                    message = await self._call.read()
                except grpc.aio.AioRpcError as exc:
                    failure = ApiError.from_rpc(exc)
                    self._ended = True
                    yield "error", models.ChatError(code=failure.code.name, message=failure.message)
                    return
                if message is grpc.aio.EOF:
                    yield (
                        "error",
                        models.ChatError(
                            code="INTERNAL", message="the reply ended before it was finished"
                        ),
                    )
                    return
                event = to_event(message)
                self._ended = event[0] in ("done", "error")
                yield event
                if self._ended:
                    return
        finally:
            # Whatever ended us (the client left, a server shutdown, the end), the call must not
            # outlive the response: cancelling it is what stops the model.
            self.cancel()


async def open_chat(orchestrator: Any, request: opb.ChatRequest, timeout: float) -> ChatStream:
    """Starts a chat and waits for its first event; raises ApiError for a failure before it."""
    call = orchestrator.Chat(request, timeout=timeout)
    try:
        message = await call.read()
    except grpc.aio.AioRpcError as exc:
        raise ApiError.from_rpc(exc) from exc
    except BaseException:
        call.cancel()
        raise
    if message is grpc.aio.EOF:
        raise ApiError(grpc.StatusCode.INTERNAL, "the orchestrator ended the chat without a reply")
    first = to_event(message)
    if first[0] == "error":
        call.cancel()
        assert isinstance(first[1], models.ChatError)
        raise ApiError(status_code(first[1].code), first[1].message)
    return ChatStream(call, first)

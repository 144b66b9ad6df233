"""`POST /v1/chat`: a streamed, cited chat reply as server-sent events (SPEC B8)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from memex.gateway import metrics
from memex.gateway.chat_stream import EventStream, delta_json, event_name, open_chat
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.models.chat import ChatRequest
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(prefix="/v1", tags=["chat"], dependencies=[Depends(caller)], responses=ERRORS)

EVENTS_DOC = """Server-sent events, each `event: <name>` with one JSON object as `data`:
`meta` {conversation_id, model, persona, as_of}, then many `delta` {text}, one `citations`
{citations, withheld}, and `done` {message_id, latency_ms, chunks_considered} (terminal); or
`error` {code, message} (terminal) in place of the rest after a failure. `: ping` comment lines
keep an idle stream open. A failure before the first event is an ordinary JSON error response.
Closing the connection cancels the reply (the model stops generating)."""


class StreamResponse(EventSourceResponse):
    """An event stream that runs ``on_close`` however it ends, even if it never started
    sending (a client gone before the first byte), so no gRPC call outlives its response."""

    def __init__(self, content: Any, on_close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._on_close()


def sse_schema(names: list[str] | None) -> dict[str, Any]:
    """The schema of one event of a stream, as schemathesis and OpenAPI 3.2 read it."""
    event: dict[str, Any] = {"type": "string"}
    if names:
        event["enum"] = names
    return {
        "type": "object",
        "required": ["data"],
        "properties": {"event": event, "data": {"type": "string"}},
    }


SSE_EVENT = sse_schema(["meta", "delta", "citations", "done", "error"])


def ping() -> ServerSentEvent:
    """The keep-alive comment line."""
    return ServerSentEvent(comment="ping")


async def sse_events(stream: EventStream, route: str) -> AsyncIterator[ServerSentEvent]:
    """The stream's events as SSE frames, counted as an open stream while they last."""
    gauge = metrics.OPEN_STREAMS.labels(route)
    gauge.inc()
    try:
        async for event in stream.events():
            data = delta_json(event) if isinstance(event, str) else event.model_dump_json()
            yield ServerSentEvent(event=event_name(event), data=data)
    finally:
        gauge.dec()


def event_response(stream: EventStream, route: str, ping_seconds: float) -> StreamResponse:
    """The stream's events as the SSE response of ``route``: a ping comment after every
    ``ping_seconds`` idle, and the stream cancelled however the response ends."""
    return StreamResponse(
        sse_events(stream, route),
        stream.cancel,
        ping=ping_seconds,
        ping_message_factory=ping,
        sep="\n",
    )


@router.post(
    "/chat",
    summary="Streamed chat reply (server-sent events)",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": EVENTS_DOC,
            "content": {"text/event-stream": {"schema": SSE_EVENT}},
        }
    },
)
async def chat(
    c: ClientsDep,
    s: SettingsDep,
    tenant: TenantDep,
    body: ChatRequest,
    request: Request,
) -> StreamResponse:
    """Streams one reply in a conversation (a new one when conversation_id is empty).
    Sensitive notes are used only with `include_sensitive` and a caller allowed them (else 403).
    With `as_of`, this reply reads the memory as it stood at the end of that day."""
    stream = await open_chat(
        c.orchestrator,
        opb.ChatRequest(
            tenant=tenant,
            conversation_id=body.conversation_id,
            message=body.message,
            persona=body.persona,
            include_sensitive=sensitive_grant(request, body.include_sensitive),
            as_of=body.as_of,
        ),
        s.chat_timeout_seconds,
    )
    return event_response(stream, "/v1/chat", s.sse_ping_seconds)

"""`POST /v1/ask` (one cited answer) and `POST /v1/search` (hybrid search with telemetry)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from memex.gateway import convert, reads
from memex.gateway.chat_stream import open_ask
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.disconnect import unless_disconnected
from memex.gateway.models.ask import AskRequest, AskResponse, SearchRequest, SearchResponse
from memex.gateway.present import SearchHit
from memex.gateway.routes.chat import StreamResponse, event_response, sse_schema
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(prefix="/v1", tags=["ask"], dependencies=[Depends(caller)], responses=ERRORS)

ANSWER_DOC = """The checked answer as JSON; with `"stream": true`, server-sent events instead, each
`event: <name>` with one JSON object as `data`: `started` {model, persona, sources} (first), many
`delta` {text} (the draft answer as the model writes it, not yet checked), at most one `redraft`
{reason} (the draft so far is set aside: the best sources, read first, did not answer it, or
all the sources answered otherwise; the deltas after it start a new draft), then `result`
(terminal: the same object as the JSON answer, which can differ from the draft, e.g. an
abstention); or `error` {code, message} (terminal) in place of the rest after a failure. `: ping`
comment lines keep an idle stream open. A failure before the first event is an ordinary JSON
error response. Closing the connection cancels the ask (the model stops generating)."""
ASK_EVENT = sse_schema(["started", "delta", "redraft", "result", "error"])


@router.post(
    "/ask",
    response_model=AskResponse,
    summary="A cited answer from memory (optionally streamed as server-sent events)",
    responses={
        200: {
            "description": ANSWER_DOC,
            "content": {"text/event-stream": {"schema": ASK_EVENT}},
        }
    },
)
async def ask(
    c: ClientsDep,
    s: SettingsDep,
    tenant: TenantDep,
    body: AskRequest,
    request: Request,
) -> AskResponse | StreamResponse:
    """One-shot agentic ask: plan, retrieve, synthesize, ground-check. Writes no conversation.
    Sensitive notes are used only with `include_sensitive` and a caller allowed them (else 403),
    the rule of reads: the answer and its quotes go to the caller. With `as_of`, the answer comes
    from the memory as it stood at the end of that day (docs/as-of.md)."""
    question = opb.AskRequest(
        tenant=tenant,
        question=body.question,
        persona=body.persona,
        limit=body.limit,
        include_sensitive=sensitive_grant(request, body.include_sensitive),
        as_of=body.as_of,
    )
    if body.stream:
        streaming = c.orchestrator.AskStream(
            opb.AskStreamRequest(ask=question), timeout=s.request_timeout_seconds
        )
        # Retrieval runs before the first event: a client gone by then cancels the ask too.
        stream = await unless_disconnected(request, open_ask(streaming), streaming.cancel)
        return event_response(stream, "/v1/ask", s.sse_ping_seconds)
    call = c.orchestrator.Ask(question)
    reply = await unless_disconnected(request, call, call.cancel)
    return convert.ask(reply)


@router.post("/search", response_model=SearchResponse, summary="Hybrid search")
async def search(
    c: ClientsDep,
    tenant: TenantDep,
    body: SearchRequest,
    request: Request,
) -> SearchResponse:
    """Vector, keyword and graph search fused, with each channel's rank and score per item.
    Sensitive items only with `include_sensitive` and a caller allowed them (else 403). With
    `as_of`, the memory as it stood at the end of that day: an earlier version of a note is a
    hit whose `provenance.episode_id` is "NOTE_ID@vN" (docs/as-of.md)."""
    where = reads.filters(
        since=body.since,
        until=body.until,
        tags=body.tags,
        collections=body.collections,
        include_sensitive=sensitive_grant(request, body.include_sensitive),
        as_of=body.as_of,
    )
    reply = await c.orchestrator.Search(
        reads.search(
            body.query,
            tenant=tenant,
            persona=body.persona,
            k=body.limit,
            channels=body.channels,
            where=where,
        )
    )
    return SearchResponse(
        items=[SearchHit.from_proto(i) for i in reply.items], turn_id=reply.turn_id
    )

"""Queued chat (SPEC B13): pending turns in threads, answered by the chat worker."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request
from sse_starlette import EventSourceResponse

from memex.gateway import convert
from memex.gateway.chat_stream import open_watch
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.disconnect import unless_disconnected
from memex.gateway.models.turns import ThreadDeleted, ThreadList, TurnCreate, TurnList, TurnResponse
from memex.gateway.routes.chat import StreamResponse, event_response, sse_schema
from memex.gateway.security import SensitiveReplies, TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(prefix="/v1", tags=["turns"], dependencies=[Depends(caller)], responses=ERRORS)

EVENTS_DOC = """Server-sent events (issue 37), each `event: <name>` with one JSON object as `data`:
first a `turn` {turn, current: true} for each turn the thread holds, oldest first, then a `turn`
{turn, current: false} each time one changes (a question pending → thinking → answered or error;
an answer when it is written). `deleted` {thread_id} (terminal) when the thread is forgotten;
`error` {code, message} (terminal) after a failure. `: ping` comment lines keep an idle stream
open. An unknown thread is an ordinary 404 JSON error response."""
TURN_EVENT = sse_schema(["turn", "deleted", "error"])


@router.post("/turns", status_code=202, response_model=TurnResponse, summary="Queue a question")
async def create_turn(
    c: ClientsDep,
    tenant: TenantDep,
    body: TurnCreate,
    request: Request,
) -> TurnResponse:
    """A pending user turn (in a new thread when thread_id is empty); poll it for the answer.
    Its answer uses sensitive notes only with `include_sensitive` and a caller allowed them
    (else 403, now: the grant is checked when the turn is queued and stored with it). With
    `as_of`, the answer reads the memory as it stood at the end of that day."""
    reply = await c.orchestrator.CreateTurn(
        opb.CreateTurnRequest(
            tenant=tenant,
            thread_id=body.thread_id,
            text=body.text,
            include_sensitive=sensitive_grant(request, body.include_sensitive),
            as_of=body.as_of,
        )
    )
    return TurnResponse(turn=convert.turn(reply.turn))


@router.get("/turns/{turn_id}", response_model=TurnResponse, summary="A turn's state")
async def get_turn(
    c: ClientsDep,
    tenant: TenantDep,
    turn_id: str = Path(min_length=1, max_length=128),
) -> TurnResponse:
    """A turn: pending, thinking, answered or error; 404 for an unknown id."""
    reply = await c.orchestrator.GetTurn(opb.GetTurnRequest(tenant=tenant, turn_id=turn_id))
    return TurnResponse(turn=convert.turn(reply.turn))


@router.get("/threads", response_model=ThreadList, summary="List threads")
async def list_threads(
    c: ClientsDep,
    tenant: TenantDep,
    limit: int = Query(50, ge=1, le=1000),
) -> ThreadList:
    """Threads, newest first."""
    reply = await c.orchestrator.ListThreads(opb.ListThreadsRequest(tenant=tenant, limit=limit))
    return ThreadList(threads=[convert.thread(t) for t in reply.threads])


@router.get("/threads/{thread_id}/turns", response_model=TurnList, summary="A thread's turns")
async def list_turns(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    thread_id: str = Path(min_length=1, max_length=128),
    include_sensitive: SensitiveReplies = False,
) -> TurnList:
    """Every turn of a thread, oldest first; 404 for an unknown thread."""
    reply = await c.orchestrator.ListTurns(
        opb.ListTurnsRequest(
            tenant=tenant,
            thread_id=thread_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    return TurnList(turns=[convert.turn(t) for t in reply.turns])


@router.get(
    "/threads/{thread_id}/events",
    summary="A thread's turns as they change (server-sent events)",
    response_class=EventSourceResponse,
    responses={
        200: {"description": EVENTS_DOC, "content": {"text/event-stream": {"schema": TURN_EVENT}}}
    },
)
async def thread_events(
    c: ClientsDep,
    s: SettingsDep,
    tenant: TenantDep,
    request: Request,
    thread_id: str = Path(min_length=1, max_length=128),
    include_sensitive: bool = Query(
        False,
        description="Show replies that drew on sensitive notes (else placeholders); as for "
        "GET /v1/threads/{thread_id}/turns.",
    ),
) -> StreamResponse:
    """The thread's turns, then each change as it happens: what polling GET /v1/turns/{id}
    would see, pushed. 404 for an unknown thread."""
    # No deadline: a watch lasts as long as its client stays; the client leaving cancels it.
    watching = c.orchestrator.WatchThread(
        opb.WatchThreadRequest(
            tenant=tenant,
            thread_id=thread_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    stream = await unless_disconnected(request, open_watch(watching, thread_id), watching.cancel)
    return event_response(stream, "/v1/threads/{thread_id}/events", s.sse_ping_seconds)


@router.delete("/threads/{thread_id}", response_model=ThreadDeleted, summary="Forget a thread")
async def delete_thread(
    c: ClientsDep,
    tenant: TenantDep,
    thread_id: str = Path(min_length=1, max_length=128),
) -> ThreadDeleted:
    """Deletes a thread with all its turns (questions and answers); 404 for an unknown id. The
    receipt counts the turns deleted and those found afterwards (0)."""
    reply = await c.orchestrator.DeleteThread(
        opb.DeleteThreadRequest(tenant=tenant, thread_id=thread_id)
    )
    return ThreadDeleted(
        thread_id=thread_id,
        turns_deleted=reply.turns_deleted,
        turns_remaining=reply.turns_remaining,
    )

"""The records reads: `POST /v1/records/query`, `GET /v1/people/{person}/timeline`,
`GET /v1/inbox`, all through the orchestrator's read policy (issue 11)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request

from memex.gateway import reads
from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.models.records import (
    InboxResponse,
    RecordsQuery,
    RecordsResponse,
    TimelineResponse,
)
from memex.gateway.present import Record, Timeline
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(prefix="/v1", tags=["records"], dependencies=[Depends(caller)], responses=ERRORS)
SENSITIVE = Query(
    False, description="Include sensitive items: needs a key granted it (or loopback, no key)."
)
DATE = r"^(\d{4}-\d{2}-\d{2})?$"
AS_OF = Query(
    "",
    pattern=DATE,
    description="As it stood at the end of this day (UTC); empty: now. A day after today is a "
    "400 (docs/as-of.md).",
)


@router.post("/records/query", response_model=RecordsResponse, summary="Query records")
async def query_records(
    c: ClientsDep,
    tenant: TenantDep,
    body: RecordsQuery,
    request: Request,
) -> RecordsResponse:
    """Records of one allowlisted collection matching every filter (403 outside the allowlist).
    Sensitive records only with `include_sensitive` and a caller allowed them. With `as_of`, as
    they stood at the end of that day."""
    where = reads.filters(
        since=body.since,
        until=body.until,
        tags=body.tags,
        include_sensitive=sensitive_grant(request, body.include_sensitive),
        as_of=body.as_of,
    )
    reply = await c.orchestrator.QueryRecords(
        reads.records(
            body.collection,
            [(f.field, f.op, f.value) for f in body.filters],
            tenant=tenant,
            sort=body.sort,
            limit=body.limit,
            where=where,
        )
    )
    return RecordsResponse(records=[Record.from_proto(r) for r in reply.records])


@router.get("/people/{person}/timeline", response_model=TimelineResponse, summary="A timeline")
async def timeline(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    person: str = Path(min_length=1, max_length=256, description="An entity id, name or alias."),
    limit: int = Query(0, ge=0, le=1000, description="0: every entry."),
    since: str = Query("", pattern=DATE, description="Only entries dated on or after."),
    until: str = Query("", pattern=DATE, description="Only entries dated on or before."),
    include_sensitive: bool = SENSITIVE,
    as_of: str = AS_OF,
) -> Timeline:
    """Everything about one person (entity) in date order; 404 for an unknown one, 403 for a
    sensitive one unless asked for and allowed. With `as_of`, the person and the entries as
    they stood at the end of that day."""
    where = reads.filters(
        since=since,
        until=until,
        include_sensitive=sensitive_grant(request, include_sensitive),
        as_of=as_of,
    )
    reply = await c.orchestrator.PersonTimeline(
        opb.PersonTimelineRequest(tenant=tenant, person=person, limit=limit, filters=where)
    )
    return Timeline.from_proto(reply)


@router.get("/inbox", response_model=InboxResponse, summary="Open inbox items")
async def inbox(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    limit: int = Query(0, ge=0, le=1000, description="0: the service default."),
    include_done: bool = Query(False, description="Also items done, archived or dismissed."),
    include_sensitive: bool = SENSITIVE,
    as_of: str = AS_OF,
) -> InboxResponse:
    """Inbox items not done, soonest first; with `as_of`, as the inbox stood at the end of that
    day."""
    reply = await c.orchestrator.ListInbox(
        opb.ListInboxRequest(
            tenant=tenant,
            limit=limit,
            include_done=include_done,
            include_sensitive=sensitive_grant(request, include_sensitive),
            as_of=as_of,
        )
    )
    return InboxResponse(items=[Record.from_proto(r) for r in reply.items])

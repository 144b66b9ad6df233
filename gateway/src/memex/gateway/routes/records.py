"""The records reads: `POST /v1/records/query`, `GET /v1/people/{person}/timeline`,
`GET /v1/inbox` (straight to the retrieval service)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query

from memex.gateway import convert, models
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.security import caller
from memex.retrieval.v1 import retrieval_pb2 as rpb

router = APIRouter(prefix="/v1", tags=["records"], dependencies=[Depends(caller)], responses=ERRORS)


@router.post("/records/query", response_model=models.RecordsResponse, summary="Query records")
async def query_records(
    c: ClientsDep,
    s: SettingsDep,
    body: models.RecordsQuery,
) -> models.RecordsResponse:
    """Records of one allowlisted collection matching every filter (403 outside the allowlist)."""
    reply = await c.retrieval.QueryRecords(
        rpb.QueryRecordsRequest(
            tenant=s.tenant,
            collection=body.collection,
            filter=[convert.field_filter(f) for f in body.filters],
            sort=body.sort,
            limit=body.limit,
        )
    )
    return models.RecordsResponse(records=[convert.record(r) for r in reply.records])


@router.get(
    "/people/{person}/timeline", response_model=models.TimelineResponse, summary="A timeline"
)
async def timeline(
    c: ClientsDep,
    s: SettingsDep,
    person: str = Path(min_length=1, max_length=256, description="The entity id."),
    limit: int = Query(0, ge=0, le=1000, description="0: the service default."),
) -> models.TimelineResponse:
    """Everything about one person (entity) in date order; 404 for an unknown one."""
    reply = await c.retrieval.PersonTimeline(
        rpb.PersonTimelineRequest(tenant=s.tenant, entity_id=person, limit=limit)
    )
    return models.TimelineResponse(
        entity=convert.record(reply.entity) if reply.HasField("entity") else None,
        entries=[
            models.TimelineEntry(date=e.date, item=convert.item(e.item)) for e in reply.entries
        ],
    )


@router.get("/inbox", response_model=models.InboxResponse, summary="Open inbox items")
async def inbox(
    c: ClientsDep,
    s: SettingsDep,
    limit: int = Query(0, ge=0, le=1000, description="0: the service default."),
    include_done: bool = Query(False, description="Also items done, archived or dismissed."),
) -> models.InboxResponse:
    """Inbox items not done, soonest first."""
    reply = await c.retrieval.ListInbox(
        rpb.ListInboxRequest(tenant=s.tenant, limit=limit, include_done=include_done)
    )
    return models.InboxResponse(items=[convert.record(r) for r in reply.items])

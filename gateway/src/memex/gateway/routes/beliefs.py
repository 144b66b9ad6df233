"""Beliefs, the learning loop (issue 37, docs/reflect.md): `POST /v1/beliefs/reflect` runs it,
`GET /v1/beliefs` lists what it made (and the vault's own), and a person confirms, rejects or
forgets a derived belief. All through the orchestrator (Reflect, ListBeliefs, ReviewBelief,
ForgetBelief)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request

from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.present_beliefs import (
    Belief,
    BeliefForgotten,
    BeliefsResponse,
    ReflectReport,
    ReflectRequest,
)
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(
    prefix="/v1/beliefs", tags=["beliefs"], dependencies=[Depends(caller)], responses=ERRORS
)
REFLECT_SECONDS = 3600.0  # a run reads up to 200 notes with a model on the CPU
BELIEF_ID = Path(
    min_length=1, max_length=256, description="A belief id, as `GET /v1/beliefs` lists it."
)


@router.post("/reflect", response_model=ReflectReport, summary="Derive beliefs from notes")
async def reflect(
    c: ClientsDep, tenant: TenantDep, body: ReflectRequest, request: Request
) -> ReflectReport:
    """Reads the notes of the window (your own notes only: never the assistant's replies, and no
    sensitive note reaches a remote reasoner), asks the reasoner for conclusions with quotes,
    grades the quotes, and writes the beliefs resting on a verbatim or close quote. Takes minutes
    on a CPU; 400 while another run for the tenant is going."""
    reply = await c.orchestrator.Reflect(
        opb.ReflectRequest(
            tenant=tenant,
            since=body.since,
            until=body.until,
            max_episodes=body.max_episodes,
            include_sensitive=sensitive_grant(request, body.include_sensitive),
        ),
        timeout=REFLECT_SECONDS,
    )
    return ReflectReport.from_proto(reply)


@router.get("", response_model=BeliefsResponse, summary="List beliefs")
async def list_beliefs(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    include_sensitive: bool = Query(
        False, description="Include sensitive beliefs: needs a key granted it (or loopback)."
    ),
    include_rejected: bool = Query(False, description="Include those you rejected."),
    limit: int = Query(0, ge=0, le=1000, description="0: 100."),
) -> BeliefsResponse:
    """Beliefs, newest first: the learning loop's and the vault's own."""
    reply = await c.orchestrator.ListBeliefs(
        opb.ListBeliefsRequest(
            tenant=tenant,
            include_sensitive=sensitive_grant(request, include_sensitive),
            include_rejected=include_rejected,
            limit=limit,
        )
    )
    return BeliefsResponse(beliefs=[Belief.from_proto(b) for b in reply.beliefs])


async def _review(c: ClientsDep, tenant: str, belief_id: str, verdict: int) -> Belief:
    reply = await c.orchestrator.ReviewBelief(
        opb.ReviewBeliefRequest(tenant=tenant, id=belief_id, verdict=verdict)  # type: ignore[arg-type]
    )
    return Belief.from_proto(reply.belief)


@router.post("/{belief_id}/confirm", response_model=Belief, summary="Confirm a belief")
async def confirm(c: ClientsDep, tenant: TenantDep, belief_id: str = BELIEF_ID) -> Belief:
    """Marks a derived belief confirmed (and active). 404 for an unknown id; 400 for one the
    vault holds (edit records/beliefs.jsonl)."""
    return await _review(c, tenant, belief_id, opb.BELIEF_VERDICT_CONFIRM)


@router.post("/{belief_id}/reject", response_model=Belief, summary="Reject a belief")
async def reject(c: ClientsDep, tenant: TenantDep, belief_id: str = BELIEF_ID) -> Belief:
    """Rejects a derived belief: it loads nowhere and is not made again from the same evidence.
    404 / 400 as confirm."""
    return await _review(c, tenant, belief_id, opb.BELIEF_VERDICT_REJECT)


@router.delete("/{belief_id}", response_model=BeliefForgotten, summary="Forget a belief")
async def forget(c: ClientsDep, tenant: TenantDep, belief_id: str = BELIEF_ID) -> BeliefForgotten:
    """Deletes a derived belief (a rejected one may then be made again). 404 / 400 as confirm."""
    reply = await c.orchestrator.ForgetBelief(opb.ForgetBeliefRequest(tenant=tenant, id=belief_id))
    return BeliefForgotten(deleted=reply.deleted)

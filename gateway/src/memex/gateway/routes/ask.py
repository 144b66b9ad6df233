"""`POST /v1/ask` (one cited answer) and `POST /v1/search` (hybrid search with telemetry)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from memex.gateway import convert, models
from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.disconnect import unless_disconnected
from memex.gateway.security import caller
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.retrieval.v1 import retrieval_pb2 as rpb

router = APIRouter(prefix="/v1", tags=["ask"], dependencies=[Depends(caller)], responses=ERRORS)


@router.post("/ask", response_model=models.AskResponse, summary="A cited answer from memory")
async def ask(
    c: ClientsDep,
    s: SettingsDep,
    body: models.AskRequest,
    request: Request,
) -> models.AskResponse:
    """One-shot agentic ask: plan, retrieve, synthesize, ground-check. Writes no conversation."""
    call = c.orchestrator.Ask(
        opb.AskRequest(
            tenant=s.tenant, question=body.question, persona=body.persona, limit=body.limit
        )
    )
    reply = await unless_disconnected(request, call, call.cancel)
    return convert.ask(reply)


@router.post("/search", response_model=models.SearchResponse, summary="Hybrid search")
async def search(
    c: ClientsDep,
    s: SettingsDep,
    body: models.SearchRequest,
) -> models.SearchResponse:
    """Vector, keyword and graph search fused, with each channel's score per item."""
    reply = await c.orchestrator.Search(
        opb.SearchRequest(
            search=rpb.SearchRequest(tenant=s.tenant, query=body.query, k=body.limit),
            persona=body.persona,
        )
    )
    return models.SearchResponse(
        items=[convert.item(i) for i in reply.items], turn_id=reply.turn_id
    )

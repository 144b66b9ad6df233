"""`GET /v1/personas`: the personas ask and chat accept, for pickers (the web page's among them)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from memex.gateway import convert
from memex.gateway.clients import Clients
from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.models.personas import PersonaList
from memex.gateway.security import caller
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(
    prefix="/v1", tags=["personas"], dependencies=[Depends(caller)], responses=ERRORS
)


async def list_personas(c: Clients) -> opb.ListPersonasResponse:
    """The orchestrator's personas (over gRPC: the gateway knows no persona of its own)."""
    reply: opb.ListPersonasResponse = await c.orchestrator.ListPersonas(opb.ListPersonasRequest())
    return reply


@router.get("/personas", response_model=PersonaList, summary="List personas")
async def personas(c: ClientsDep) -> PersonaList:
    """Every persona, sorted by name (built-ins and the personas folder's), with the defaults an
    empty persona means in ask and in chat."""
    return convert.personas(await list_personas(c))

"""`GET /v1/evidence/{turn_id}`: an answer's evidence bundle as a file to keep or share
(orchestrator GetEvidence, issue 37; docs/evidence.md)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.present_evidence import EvidenceBundle, filename
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(
    prefix="/v1/evidence", tags=["evidence"], dependencies=[Depends(caller)], responses=ERRORS
)

DOWNLOAD: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The bundle, as a file to save: `Content-Disposition: attachment`.",
        "headers": {
            "Content-Disposition": {
                "description": 'attachment; filename="memex-evidence-<turn_id>.json"',
                "schema": {"type": "string"},
            }
        },
    }
}


@router.get(
    "/{turn_id}",
    response_model=EvidenceBundle,
    summary="An answer's evidence bundle",
    responses=DOWNLOAD,
)
async def get_evidence(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    turn_id: str = Path(
        min_length=1,
        max_length=128,
        # memex's ids are ASCII (uuid hex); this also keeps out blank and Unicode-space ids,
        # which the orchestrator refuses (schemathesis sent U+0085).
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="The answer's id: an ask's turn_id, a chat reply's message_id (the `done` "
        "event, a conversation's message id) or a queued answer's turn id.",
    ),
    include_sensitive: bool = Query(
        False,
        description="Keep sensitive excerpts, their citations and an answer that drew on them "
        "(else placeholders); allowed to a key granted sensitive reads, or a keyless loopback "
        "caller (403 otherwise).",
    ),
) -> Response:
    """The question, the answer, every excerpt the model was shown with its note's version, the
    citations with their quotes and support grades, the claim check, the model, the prompt
    version and the persona, as one JSON file. Sensitive excerpts are placeholders unless asked
    for. 404 for an id with no bundle (answers from before bundles were kept have none)."""
    reply = await c.orchestrator.GetEvidence(
        opb.GetEvidenceRequest(
            tenant=tenant,
            turn_id=turn_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    bundle = EvidenceBundle.model_validate_json(reply.bundle_json)
    return Response(
        content=bundle.model_dump_json(indent=2),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="{filename(bundle.turn_id)}"'},
    )

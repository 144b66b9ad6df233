"""Notes: a cited note's text, so the web page's citation links open it (orchestrator GetNote,
under the read policy: a sensitive note only when asked for and allowed)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request

from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.present import Note
from memex.gateway.security import caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb

router = APIRouter(
    prefix="/v1/notes", tags=["notes"], dependencies=[Depends(caller)], responses=ERRORS
)


@router.get("/{episode_id}", response_model=Note, summary="A cited note")
async def get_note(
    c: ClientsDep,
    s: SettingsDep,
    request: Request,
    episode_id: str = Path(min_length=1, max_length=256, description="A citation's episode_id."),
    include_sensitive: bool = Query(
        False,
        description="Needed to read a note marked sensitive (403 without it); allowed to a key "
        "granted sensitive reads, or a keyless loopback caller.",
    ),
) -> Note:
    """The note a citation's episode_id names, with its sections' offsets so the cited one can
    be marked; 404 when the note is no longer indexed."""
    reply = await c.orchestrator.GetNote(
        opb.GetNoteRequest(
            tenant=s.tenant,
            episode_id=episode_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    return Note.from_proto(reply)

"""Notes: a cited note's text, so the web page's citation links open it (orchestrator GetNote,
under the read policy: a sensitive note only when asked for and allowed), and forgetting a note
with a verified receipt (orchestrator ForgetNote)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.convertors import PathConvertor, register_url_convertor

from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.present import ForgetReceipt, Note
from memex.gateway.security import TenantDep, caller, sensitive_grant
from memex.orchestrator.v1 import orchestrator_pb2 as opb


class NoteNameConvertor(PathConvertor):
    """A note's episode id, vault path or title: any characters, slashes and newlines too.
    Starlette's ``path`` stops at a newline, and a name it cannot match would fall through to
    the GET route's path and read as 405 instead of the note not being found."""

    regex = "(?s:.+)"


register_url_convertor("note_name", NoteNameConvertor())

router = APIRouter(
    prefix="/v1/notes", tags=["notes"], dependencies=[Depends(caller)], responses=ERRORS
)


@router.get("/{episode_id}", response_model=Note, summary="A cited note")
async def get_note(
    c: ClientsDep,
    tenant: TenantDep,
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
            tenant=tenant,
            episode_id=episode_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    return Note.from_proto(reply)


@router.delete("/{note:note_name}", response_model=ForgetReceipt, summary="Forget a note")
async def forget_note(
    c: ClientsDep,
    tenant: TenantDep,
    note: str = Path(
        min_length=1, max_length=1024, description="Episode id, vault path or unique title."
    ),
    dry_run: bool = Query(False, description="Count what would go; change nothing."),
) -> ForgetReceipt:
    """Forgets a note everywhere memex keeps it (chunks, vectors, keyword index, graph,
    telemetry, LLM log text), searches every store again and returns the receipt; check
    ``complete``. 404 for a note nothing names, 400 for an ambiguous title."""
    r = await c.orchestrator.ForgetNote(
        opb.ForgetNoteRequest(tenant=tenant, note=note, dry_run=dry_run)
    )
    return ForgetReceipt.from_proto(r)

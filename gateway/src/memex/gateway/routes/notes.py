"""Notes: a cited note's text, so the web page's citation links open it (orchestrator GetNote,
under the read policy: a sensitive note only when asked for and allowed), and forgetting a note
with a verified receipt (orchestrator ForgetNote)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import grpc
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import StreamingResponse
from starlette.convertors import PathConvertor, register_url_convertor

from memex.gateway.deps import ERRORS, ClientsDep
from memex.gateway.errors import ApiError
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
    episode_id: str = Path(
        min_length=1,
        max_length=256,
        description='A citation\'s episode_id; "NOTE_ID@vN" for an earlier version.',
    ),
    include_sensitive: bool = Query(
        False,
        description="Needed to read a note marked sensitive (403 without it); allowed to a key "
        "granted sensitive reads, or a keyless loopback caller.",
    ),
) -> Note:
    """The note a citation's episode_id names, with its sections' offsets so the cited one can
    be marked, and every version memex kept with when each held (`versions`, oldest first; an
    earlier one's episode_id reads it here: docs/as-of.md); 404 when the note is no longer
    indexed."""
    reply = await c.orchestrator.GetNote(
        opb.GetNoteRequest(
            tenant=tenant,
            episode_id=episode_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    return Note.from_proto(reply)


PLAYABLE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The file's bytes as the vault holds them now, to play or show inline.",
        "content": {"audio/*": {}, "application/pdf": {}},
        "headers": {
            "Content-Disposition": {
                "description": "inline; filename*=UTF-8''<the file's name>",
                "schema": {"type": "string"},
            }
        },
    }
}


@router.get(
    "/{episode_id}/file",
    response_class=StreamingResponse,
    summary="A cited voice memo's or PDF's file",
    responses=PLAYABLE,
)
async def read_note_file(
    c: ClientsDep,
    tenant: TenantDep,
    request: Request,
    episode_id: str = Path(
        min_length=1, max_length=256, description="A voice memo's or a PDF's episode_id."
    ),
    include_sensitive: bool = Query(
        False, description="Needed for a note marked sensitive (403 without it), as for its text."
    ),
) -> StreamingResponse:
    """The file a cited voice memo or PDF was read from, so a reader plays the memo from the
    cited time (`[[walk memo]] 02:41`) or opens the PDF at the page. 404 for an unknown note or
    a file gone from the vault; 400 (FAILED_PRECONDITION) for a note that is its own text."""
    call = c.orchestrator.ReadNoteFile(
        opb.ReadNoteFileRequest(
            tenant=tenant,
            episode_id=episode_id,
            include_sensitive=sensitive_grant(request, include_sensitive),
        )
    )
    head = await call.read()  # an error here is the response's status, before any byte
    if not isinstance(head, opb.ReadNoteFileResponse):  # the stream ended at once
        call.cancel()
        raise ApiError(grpc.StatusCode.UNAVAILABLE, "the orchestrator sent no file: try again")

    async def body() -> AsyncIterator[bytes]:
        try:
            async for reply in call:
                yield reply.data
        finally:
            call.cancel()  # the reader went away: stop reading the file

    return StreamingResponse(
        body(),
        media_type=head.content_type,
        headers={
            "Content-Length": str(head.size),
            "Content-Disposition": f"inline; filename*=UTF-8''{quote(head.name)}",
        },
    )


@router.delete("/{note:note_name}", response_model=ForgetReceipt, summary="Forget a note")
async def forget_note(
    c: ClientsDep,
    tenant: TenantDep,
    note: str = Path(
        min_length=1,
        max_length=1024,
        # Not only whitespace, as Python, JSON Schema and Rust's regex each count it (the
        # orchestrator refuses a blank name).
        pattern=r"[^\s\x1c-\x1f\x85]",
        description="Episode id, vault path or unique title.",
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

"""Notes: a cited note's text, so the web page's citation links open it (retrieval GetNote), and
forgetting a note with a receipt (orchestrator ForgetNote)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, Field

from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.security import caller
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.retrieval.v1 import retrieval_pb2 as rpb

router = APIRouter(
    prefix="/v1/notes", tags=["notes"], dependencies=[Depends(caller)], responses=ERRORS
)


class NoteChunk(BaseModel):
    """One indexed chunk of the note: ``text[start:end]`` (offsets in code points)."""

    id: str = Field(description="The chunk id, as a citation's item_id names it.")
    ordinal: int
    heading: str = Field(description='Heading path inside the note, e.g. "Plans > Q3".')
    start: int
    end: int


class Note(BaseModel):
    """A note as indexed: metadata and the body (frontmatter removed)."""

    episode_id: str
    title: str
    path: str = Field(description="Relative to the vault root.")
    date: str = Field(description="YYYY-MM-DD.")
    tags: list[str]
    sensitive: bool = Field(description="Withheld from remote models; shown to you here.")
    text: str
    chunks: list[NoteChunk]


@router.get("/{episode_id}", response_model=Note, summary="A cited note")
async def get_note(
    c: ClientsDep,
    s: SettingsDep,
    episode_id: str = Path(min_length=1, max_length=256, description="A citation's episode_id."),
) -> Note:
    """The note a citation's episode_id names, with its chunks' offsets so the cited one can be
    marked; 404 when the note is no longer indexed."""
    reply = await c.retrieval.GetNote(rpb.GetNoteRequest(tenant=s.tenant, episode_id=episode_id))
    return Note(
        episode_id=reply.episode_id,
        title=reply.title,
        path=reply.path,
        date=reply.date,
        tags=list(reply.tags),
        sensitive=reply.sensitive,
        text=reply.text,
        chunks=[
            NoteChunk(id=x.id, ordinal=x.ordinal, heading=x.heading, start=x.start, end=x.end)
            for x in reply.chunks
        ],
    )


class ForgetCount(BaseModel):
    """What one store removed of one kind, and how many it still holds (0 when complete)."""

    store: str = Field(description='e.g. "retrieval (embedded)", "telemetry", "llm_log".')
    what: str = Field(description='e.g. "chunks", "vectors", "keyword index rows".')
    removed: int
    remaining: int


class ForgetCheck(BaseModel):
    """A lookup or search for the note, before and after the forget."""

    store: str
    description: str
    found_before: int
    found_after: int = Field(description="0 when nothing of the note is found any more.")


class ForgetReceipt(BaseModel):
    """The receipt of a note forget (docs/orchestrator.md, "Forgetting a note")."""

    episode_id: str
    title: str
    path: str
    counts: list[ForgetCount]
    checks: list[ForgetCheck]
    file_present: bool = Field(
        description="The file is still in the vault: delete it to forget it for good."
    )
    tombstoned: bool = Field(description="Re-indexing skips the file while it is unchanged.")
    dry_run: bool
    complete: bool = Field(
        description="Nothing remains anywhere. False after a forget: something remains, see "
        "counts and checks (a dry run is never complete)."
    )
    conversations_citing: list[str] = Field(
        description="Your conversations citing the note, left as they are."
    )
    threads_citing: list[str]
    scrubbed: bool = Field(
        description="Every store's files were scrubbed of the deleted bytes; false on Weaviate, "
        "which compacts them away in the background."
    )


@router.delete("/{note:path}", response_model=ForgetReceipt, summary="Forget a note")
async def forget_note(
    c: ClientsDep,
    s: SettingsDep,
    note: str = Path(
        min_length=1, max_length=1024, description="Episode id, vault path or unique title."
    ),
    dry_run: bool = Query(False, description="Count what would go; change nothing."),
) -> ForgetReceipt:
    """Forgets a note everywhere memex keeps it (chunks, vectors, keyword index, graph,
    telemetry, LLM log text), searches every store again and returns the receipt; check
    ``complete``. 404 for a note nothing names, 400 for an ambiguous title."""
    r = await c.orchestrator.ForgetNote(
        opb.ForgetNoteRequest(tenant=s.tenant, note=note, dry_run=dry_run)
    )
    return ForgetReceipt(
        episode_id=r.episode_id,
        title=r.title,
        path=r.path,
        counts=[
            ForgetCount(store=x.store, what=x.what, removed=x.removed, remaining=x.remaining)
            for x in r.counts
        ],
        checks=[
            ForgetCheck(
                store=x.store,
                description=x.description,
                found_before=x.found_before,
                found_after=x.found_after,
            )
            for x in r.checks
        ],
        file_present=r.file_present,
        tombstoned=r.tombstoned,
        dry_run=r.dry_run,
        complete=r.complete,
        conversations_citing=list(r.conversations_citing),
        threads_citing=list(r.threads_citing),
        scrubbed=r.scrubbed,
    )

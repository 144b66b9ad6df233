"""Notes: a cited note's text, so the web page's citation links open it (retrieval GetNote)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field

from memex.gateway.deps import ERRORS, ClientsDep, SettingsDep
from memex.gateway.security import caller
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

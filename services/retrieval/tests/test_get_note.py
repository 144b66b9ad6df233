"""GetNote: a cited note's metadata and text, on both stores, through real in-process gRPC."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from memex.retrieval.note_text import assemble
from memex.retrieval.store.base import ChunkView, NoteMeta
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub

META = NoteMeta(id="n", path="n.md", title="n", date="2024-01-01", fingerprint="f")


def view(ordinal: int, text: str, start: int) -> ChunkView:
    return ChunkView(
        id=f"n#{ordinal}", note=META, ordinal=ordinal, text=text, heading="", start=start,
        end=start + len(text),
    )  # fmt: skip


def test_assemble_keeps_every_chunk_at_its_offsets() -> None:
    chunks = [view(1, "second part", 14), view(0, "# Title\nfirst", 0), view(2, "part two", 21)]
    text = assemble(chunks)
    assert text == "# Title\nfirst\nsecond part two"
    for c in chunks:
        assert text[c.start : c.end] == c.text
    assert assemble([]) == ""


async def index(stub: Stub, vault: Path) -> None:
    async for message in stub.IndexVault(retrieval_pb2.IndexVaultRequest(vault_path=str(vault))):
        last = message
    assert last.HasField("summary")


async def test_get_note_by_a_citations_episode_id(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    found = await retrieval.Search(retrieval_pb2.SearchRequest(query="grilled sardines harbour"))
    [hit] = [i for i in found.items if i.provenance.path == "journal/2024-03-02.md"][:1]
    note = await retrieval.GetNote(
        retrieval_pb2.GetNoteRequest(episode_id=hit.provenance.episode_id)
    )
    assert (note.episode_id, note.path, note.date) == (
        hit.provenance.episode_id,
        "journal/2024-03-02.md",
        "2024-03-02",
    )
    assert note.title == hit.provenance.title
    assert list(note.tags) == ["journal"]
    assert not note.sensitive
    assert (
        note.text.index("# Saturday")
        < note.text.index("Went sailing")
        < note.text.index("## Food")
        < note.text.index("grilled sardines")
    )
    assert "date: 2024-03-02" not in note.text  # the body, not the frontmatter
    assert [c.ordinal for c in note.chunks] == sorted(c.ordinal for c in note.chunks)
    [cited] = [c for c in note.chunks if c.id == hit.id]
    assert note.text[cited.start : cited.end] == hit.text  # a citation can be highlighted
    body = (vault / "journal/2024-03-02.md").read_text()
    assert " ".join(note.text.split()) in " ".join(body.split())


async def test_get_note_bad_and_unknown_ids(retrieval: Stub, vault: Path) -> None:
    await index(retrieval, vault)
    found = await retrieval.Search(retrieval_pb2.SearchRequest(query="tomatoes basil"))
    episode = found.items[0].provenance.episode_id
    for request, code in [
        (retrieval_pb2.GetNoteRequest(episode_id="no-such-note"), grpc.StatusCode.NOT_FOUND),
        (retrieval_pb2.GetNoteRequest(episode_id=""), grpc.StatusCode.INVALID_ARGUMENT),
        (
            retrieval_pb2.GetNoteRequest(tenant="someone-else", episode_id=episode),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            retrieval_pb2.GetNoteRequest(tenant="bad tenant!", episode_id=episode),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await retrieval.GetNote(request)
        assert failed.value.code() == code, request
        assert failed.value.details()

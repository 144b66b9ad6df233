"""DeleteNote (forget) on both stores (embedded and a real Weaviate), through real in-process gRPC with
the real embedding service: index a vault, forget a distinctive note, read the receipt, search
again, re-index (the tombstone holds), change the file (it comes back)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.forget import VERSIONS
from memex.retrieval.store.counts import TRACE_KINDS
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing.retrieval import write

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub

SECRET = "Zanzibar marmalade recipe: quince, cardamom and smoked paprika, simmered overnight."


def secret_note(vault: Path) -> Path:
    return write(
        vault,
        "kitchen/Quince Marmalade.md",
        f"""
        ---
        date: 2024-04-04
        tags: [recipes]
        ---
        # Quince Marmalade
        {SECRET} Tell [[Alice Smith]] about it.

        ## Jars
        Seven jars went to the cellar shelf behind the bicycles.
        """,
    )


async def index(stub: Stub, vault: Path) -> retrieval_pb2.IndexSummary:
    async for message in stub.IndexVault(retrieval_pb2.IndexVaultRequest(vault_path=str(vault))):
        last = message
    assert last.HasField("summary")
    return last.summary


async def found_paths(stub: Stub, query: str) -> set[str]:
    reply = await stub.Search(
        retrieval_pb2.SearchRequest(
            query=query, k=50, filters=retrieval_pb2.SearchFilters(include_sensitive=True)
        )
    )
    return {i.provenance.path for i in reply.items}


async def test_forget_a_note_by_path_removes_it_everywhere_and_proves_it(
    retrieval: Stub, vault: Path, retrieval_settings: RetrievalSettings
) -> None:
    secret_note(vault)
    await index(retrieval, vault)
    assert "kitchen/Quince Marmalade.md" in await found_paths(retrieval, "quince marmalade")

    preview = await retrieval.DeleteNote(
        retrieval_pb2.DeleteNoteRequest(note="kitchen/Quince Marmalade", dry_run=True)
    )
    assert preview.dry_run and "Zanzibar marmalade" in preview.text
    assert preview.chunk_ids and preview.file_present and not preview.tombstoned
    again = await retrieval.DeleteNote(
        retrieval_pb2.DeleteNoteRequest(note=preview.episode_id, dry_run=True)
    )
    assert again.episode_id == preview.episode_id  # a dry run deleted nothing

    embedded = retrieval_settings.store == "embedded"
    if embedded:  # the note's pages moved from the WAL into the database file, as they will
        database = retrieval_settings.store_dir / "memex.db"
        with contextlib.closing(sqlite3.connect(database)) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert b"zanzibar" in database.read_bytes().lower()
    receipt = await retrieval.DeleteNote(
        retrieval_pb2.DeleteNoteRequest(note="kitchen/Quince Marmalade.md")
    )
    counts = {c.what: c for c in receipt.counts}
    assert list(counts) == [*TRACE_KINDS, VERSIONS]
    assert counts[VERSIONS].removed == 1  # its one version's ledger entry (docs/as-of.md)
    chunks = len(receipt.chunk_ids)
    assert (counts["notes"].removed, counts["chunks"].removed) == (1, chunks)
    assert counts["vectors"].removed == counts["keyword index rows"].removed == chunks
    assert counts["outgoing links"].removed == 1  # [[Alice Smith]]
    assert counts["entity mentions"].removed >= 1  # "Alice" is an entity of the vault
    assert all(c.remaining == 0 for c in receipt.counts), receipt.counts
    assert receipt.checks and all(c.found_before > 0 for c in receipt.checks), receipt.checks
    assert all(c.found_after == 0 for c in receipt.checks), receipt.checks
    assert receipt.file_present and receipt.tombstoned and not receipt.text
    assert receipt.counts[0].store.startswith("retrieval (")
    assert receipt.scrubbed == embedded  # Weaviate compacts in the background, when it chooses
    if embedded:  # not a byte of the note's words left in the store's files
        for file in retrieval_settings.store_dir.rglob("*"):
            if file.is_file():
                assert b"zanzibar" not in file.read_bytes().lower(), file

    assert "kitchen/Quince Marmalade.md" not in await found_paths(retrieval, SECRET)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await retrieval.GetNote(retrieval_pb2.GetNoteRequest(episode_id=receipt.episode_id))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND

    # The file is still there: re-indexing skips it while it is unchanged (the tombstone)...
    summary = await index(retrieval, vault)
    assert any(s.path == "kitchen/Quince Marmalade.md" for s in summary.skipped)
    assert "kitchen/Quince Marmalade.md" not in await found_paths(retrieval, SECRET)
    # ...also when it is moved or copied unchanged...
    path = vault / "kitchen/Quince Marmalade.md"
    path.rename(vault / "Marmalade.md")
    summary = await index(retrieval, vault)
    assert any(s.path == "Marmalade.md" and "forgotten" in s.reason for s in summary.skipped)
    assert not await found_paths(retrieval, SECRET) & {"Marmalade.md", path.name}
    (vault / "Marmalade.md").rename(path)
    # ...and indexes it again once the person writes something new in it.
    path.write_text(path.read_text() + "\nA new batch in May.\n")
    await index(retrieval, vault)
    assert "kitchen/Quince Marmalade.md" in await found_paths(retrieval, SECRET)


async def test_forget_by_title_and_bad_input(retrieval: Stub, vault: Path) -> None:
    secret_note(vault)
    write(vault, "a/Twin.md", "One twin.\n")
    write(vault, "b/Twin.md", "The other twin.\n")
    await index(retrieval, vault)
    receipt = await retrieval.DeleteNote(retrieval_pb2.DeleteNoteRequest(note="quince marmalade"))
    assert receipt.path == "kitchen/Quince Marmalade.md"
    assert all(c.remaining == 0 for c in receipt.counts)
    for note, code, words in [
        ("", grpc.StatusCode.INVALID_ARGUMENT, "episode id, vault path or title"),
        ("Quince Marmalade", grpc.StatusCode.NOT_FOUND, "memex search"),  # already forgotten
        ("no such note", grpc.StatusCode.NOT_FOUND, "no note has"),
        ("pantry/Alice Smith.md", grpc.StatusCode.NOT_FOUND, "no note at the vault path"),
        (
            "twin",
            grpc.StatusCode.INVALID_ARGUMENT,
            "2 notes are named 'twin' (a/Twin.md, b/Twin.md)",
        ),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await retrieval.DeleteNote(retrieval_pb2.DeleteNoteRequest(note=note))
        assert err.value.code() == code
        assert words in (err.value.details() or "")

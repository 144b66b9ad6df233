"""PDFs, saved web pages and mail in the vault: read as notes (ingest/documents.py), then indexed,
searched, cited to the page or message, skipped with a reason when unreadable, and forgotten like
notes, through the real retrieval service (in-process gRPC, the real embedding model)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.ingest import documents
from memex.retrieval.ingest.vault import scan
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing.retrieval import (
    CLIPPING,
    LEASE_PAGES,
    index_vault,
    mail,
    pdf_bytes,
    write,
    write_documents_vault,
    write_mailbox,
)

if TYPE_CHECKING:  # the async stub type exists only in the .pyi
    Stub = retrieval_pb2_grpc.RetrievalServiceAsyncStub


async def top(stub: Stub, query: str) -> retrieval_pb2.RetrievedItem:
    reply = await stub.Search(retrieval_pb2.SearchRequest(query=query))
    return reply.items[0]


def test_a_pdf_reads_as_a_section_per_page_and_names_the_pages_without_text(
    tmp_path: Path,
) -> None:
    path = tmp_path / "Lease.pdf"
    path.write_bytes(pdf_bytes(LEASE_PAGES))
    read = documents.extract(path, path.read_bytes())
    assert read.text is not None
    assert read.text.startswith("---\ntitle: Lease.pdf\n")
    assert "## p. 1\n\nTenancy agreement for 14 Larchfield Road" in read.text
    assert "## p. 2" not in read.text
    assert "## p. 3\n\nThe deposit of 1,150 GBP" in read.text
    assert "\\# 4. Notice" in read.text  # the PDF's own line is text, not a section
    assert read.warnings == ("pages without text, not indexed (scanned?): 2",)
    assert documents.locator("Lease.pdf", "p. 3") == " p. 3"
    assert documents.locator("Lease.md", "p. 3") == ""


def test_a_web_page_keeps_its_main_text_and_title(tmp_path: Path) -> None:
    path = tmp_path / "kombucha.html"
    read = documents.extract(path, CLIPPING.encode())
    assert read.text is not None
    assert "title: Kombucha at home\n" in read.text
    assert "date: '2025-04-02'" in read.text
    assert "200 g of sugar" in read.text
    assert "Subscribe" not in read.text and "All rights reserved" not in read.text


def test_a_web_page_in_another_charset_reads_as_it_declares(tmp_path: Path) -> None:
    page = (
        '<html><head><meta charset="iso-8859-1"><title>Crème brûlée</title></head><body>'
        "<article><p>Bake the crème brûlée at 150 °C for forty minutes, then chill it for two "
        "hours before the sugar goes on top and is caramelised.</p></article></body></html>"
    )
    read = documents.extract(tmp_path / "brulee.html", page.encode("latin-1"))
    assert read.text is not None
    assert "title: Crème brûlée" in read.text and "150 °C" in read.text


def test_a_mailbox_has_a_section_per_message_with_its_people(tmp_path: Path) -> None:
    path = write_mailbox(
        tmp_path / "Allotment.mbox",
        [
            mail(
                "Plot rent",
                "Ron Hale <ron@a.example>",
                "me@example.org",
                "Sun, 08 Nov 2026 10:12:00 +0000",
                "Rent is 55 pounds.\n---\nRon",
            ),
            mail(
                "Re: Plot rent",
                "Me <me@example.org>",
                "Ron Hale <ron@a.example>",
                "Mon, 09 Nov 2026 08:00:00 -0500",
                "<b>Paid</b> on Friday.",
                html=True,
            ),
        ],
    )
    read = documents.extract(path, path.read_bytes())
    assert read.text is not None
    assert (
        "## Plot rent — Ron Hale, 2026-11-08\n\nFrom: Ron Hale <ron@a.example>\nTo: me@example.org\nDate: 8 November 2026 10:12\n\nRent is 55 pounds.\n\\---"
        in read.text
    )
    assert "## Re: Plot rent — Me, 2026-11-09" in read.text
    assert "Date: 9 November 2026 08:00" in read.text  # the sender's clock, as the mail showed it
    assert "Paid on Friday." in read.text  # an HTML-only message's text
    assert "date: '2026-11-09'" in read.text  # the latest message dates the mailbox
    assert documents.locator("mail/Allotment.mbox", "Plot rent — Ron Hale, 2026-11-08") == (
        " (Plot rent — Ron Hale, 2026-11-08)"
    )


def test_unreadable_documents_say_why(tmp_path: Path) -> None:
    def reason(name: str, data: bytes) -> str:
        (tmp_path / name).write_bytes(data)
        read = documents.extract(tmp_path / name, data)
        assert read.text is None
        return read.reason

    assert "encrypted PDF" in reason(
        "Locked.pdf", pdf_bytes(["The safe code is 4471."], password="x")
    )
    assert "without text (scanned pages?)" in reason("Scan.pdf", pdf_bytes(["", ""]))
    assert reason("Broken.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog").startswith(
        "not a readable PDF"
    )
    assert "without main text" in reason("empty.html", b"<html><script>x()</script></html>")
    # A PDF encrypted with an empty password only to set permissions opens as any other.
    assert documents.extract(tmp_path / "Open.pdf", pdf_bytes(["Open text."], password="")).text


async def test_documents_are_indexed_cited_to_page_and_message_and_skipped_with_reasons(
    retrieval: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write_documents_vault(tmp_path / "vault")
    summary = await index_vault(retrieval, vault)
    assert summary.added == 5
    skipped = {s.path: s.reason for s in summary.skipped}
    assert set(skipped) == {"Scan.pdf", "Locked.pdf", "Broken.pdf", "empty.html"}
    assert "encrypted PDF" in skipped["Locked.pdf"]
    assert "Lease.pdf: pages without text, not indexed (scanned?): 2" in summary.warnings

    deposit = await top(retrieval, "who protects the deposit?")
    assert deposit.citation == "[[Lease.pdf]] p. 3"
    assert deposit.provenance.path == "Lease.pdf"
    sugar = await top(retrieval, "how much sugar goes in the kombucha")
    assert sugar.citation == "[[Kombucha at home]]"
    rent = await top(retrieval, "half-plot rent for 2027")
    assert rent.citation == "[[Allotment.mbox]] (Plot rent — Ron Hale, 2026-11-08)"
    assert rent.provenance.date == "2026-11-09"
    porch = await top(retrieval, "what did the porch screening quote come to")
    assert porch.citation == "[[Porch quote]]"
    assert "Gord Fitzpatrick" in porch.text

    parsed: list[str] = []
    real_extract = documents.extract

    def extract(path: Path, data: bytes) -> documents.Extracted:
        parsed.append(path.name)
        return real_extract(path, data)

    monkeypatch.setattr(documents, "extract", extract)
    again = await index_vault(retrieval, vault)
    # Unchanged documents are not parsed again; only those skipped (no fingerprint) are.
    assert sorted(parsed) == ["Broken.pdf", "Locked.pdf", "Scan.pdf", "empty.html"]
    assert (again.added, again.updated, again.unchanged, again.chunks_embedded) == (0, 0, 5, 0)


async def test_a_forgotten_pdf_stays_forgotten_until_it_changes(
    retrieval: Stub, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Lease.pdf").write_bytes(pdf_bytes(LEASE_PAGES))
    await index_vault(retrieval, vault)
    receipt = await retrieval.DeleteNote(retrieval_pb2.DeleteNoteRequest(note="Lease.pdf"))
    assert receipt.tombstoned
    again = await index_vault(retrieval, vault)
    assert {s.path for s in again.skipped} == {"Lease.pdf"} and again.added == 0
    (vault / "Lease.pdf").write_bytes(pdf_bytes([*LEASE_PAGES, "Addendum: a cat is allowed."]))
    assert (await index_vault(retrieval, vault)).added == 1


async def test_the_people_in_mail_have_it_in_their_timeline(
    retrieval: Stub, tmp_path: Path
) -> None:
    vault = write_documents_vault(tmp_path / "vault")
    write(
        vault,
        "records/entities.jsonl",
        '{"id": "ron", "name": "Ron Hale", "kind": "person"}\n'
        '{"id": "gord", "name": "Gord Fitzpatrick", "kind": "person"}\n',
    )
    await index_vault(retrieval, vault)
    for entity, citation in (
        ("ron", "[[Allotment.mbox]] (Plot rent — Ron Hale, 2026-11-08)"),
        ("gord", "[[Porch quote]]"),
    ):
        timeline = await retrieval.PersonTimeline(
            retrieval_pb2.PersonTimelineRequest(entity_id=entity)
        )
        assert citation in [e.item.citation for e in timeline.entries], entity


def test_a_documents_suffix_matches_in_any_case(tmp_path: Path) -> None:
    for name in ("Lease.PDF", "memos/Walk.M4A", "Note.md", "photo.JPG", "drafts/Old.Pdf"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    include = RetrievalSettings().include
    found = scan(tmp_path, include, ["drafts/*"], "records")
    assert sorted(f.rel for f in found.notes) == ["Lease.PDF", "Note.md", "memos/Walk.M4A"]


async def read_file(
    stub: Stub, episode_id: str
) -> tuple[retrieval_pb2.ReadNoteFileResponse, bytes]:
    request = retrieval_pb2.ReadNoteFileRequest(episode_id=episode_id)
    replies = [reply async for reply in stub.ReadNoteFile(request)]
    return replies[0], b"".join(reply.data for reply in replies[1:])


async def episode(stub: Stub, query: str, path: str) -> str:
    reply = await stub.Search(retrieval_pb2.SearchRequest(query=query))
    return next(i.provenance.episode_id for i in reply.items if i.provenance.path == path)


async def test_a_cited_pdfs_file_is_read_back_as_the_vault_holds_it(
    retrieval: Stub, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    (vault / "home").mkdir(parents=True)
    lease = pdf_bytes(LEASE_PAGES) + b"\n" * 600_000  # more than two 256 KiB pieces
    (vault / "home/Lease.pdf").write_bytes(lease)
    write(vault, "Plain.md", "# Plain\n\nA note about the lease and its rent.\n")
    await index_vault(retrieval, vault)
    pdf = await episode(retrieval, "lease rent", "home/Lease.pdf")

    head, data = await read_file(retrieval, pdf)
    assert (head.content_type, head.size, head.name) == ("application/pdf", len(lease), "Lease.pdf")
    assert data == lease

    plain = await episode(retrieval, "lease rent", "Plain.md")
    with pytest.raises(grpc.aio.AioRpcError) as markdown:
        await read_file(retrieval, plain)
    assert markdown.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "not a voice memo or a PDF" in str(markdown.value.details())
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await read_file(retrieval, "no-such-note")
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

    (vault / "home/Lease.pdf").unlink()  # gone from the vault, still indexed
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await read_file(retrieval, pdf)
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no longer in the vault" in str(gone.value.details())

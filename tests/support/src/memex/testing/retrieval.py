"""Helpers for tests of the retrieval service and of storage backends (contract suite).

They live in memex-testing, not in one conftest, so every backend's tests can use them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import mailbox
import random
import subprocess
import textwrap
import urllib.error
import urllib.request
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import numpy as np

from memex.retrieval.search import Tuning
from memex.retrieval.store.base import Chunk, Note, Record
from memex.retrieval.store.links import Link, link_key
from memex.retrieval.v1 import retrieval_pb2

DIM = 8


class FixedEmbedder:
    """An embedder that gives every text the same vector (``vec(1.0, 0.5)``): for searches
    whose ranking the test sets through the stored vectors, not through the query's."""

    dimension = DIM
    model_id = "fixed"

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray[Any, Any]:
        """The fixed vector, once per text."""
        return np.array([vec(1.0, 0.5)] * len(texts), dtype=np.float32)


def tuning(**changes: Any) -> Tuning:
    """Search parameters for tests: RRF k=10, every default channel weighted 1, depth 60,
    recency and salience off, k=10 (at most 200); ``changes`` override any of them."""
    base = Tuning(
        rrf_k=10,
        weights={"vector": 1.0, "keyword": 1.0, "graph": 1.0},
        depth=60,
        half_life_days=0,
        recency_weight=0.0,
        salience_weight=0.0,
        default_k=10,
        max_k=200,
        collections=(),
    )
    return dataclasses.replace(base, **changes)


def vec(*weights: float) -> list[float]:
    """An L2-normalised vector from up to DIM leading weights (the rest zero)."""
    values = np.zeros(DIM, dtype=np.float32)
    values[: len(weights)] = weights
    norm = float(np.linalg.norm(values)) or 1.0
    return [float(v) for v in values / norm]


def random_unit(rng: random.Random) -> list[float]:
    """A random L2-normalised DIM vector."""
    values = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def axis(i: int) -> list[float]:
    """The unit vector along dimension ``i``."""
    values = [0.0] * DIM
    values[i % DIM] = 1.0
    return values


def chunk(note_id: str, ordinal: int, text: str, vector: list[float], **kw: object) -> Chunk:
    """A chunk of ``note_id`` whose search text is ``text``."""
    return Chunk(
        id=f"{note_id}#{ordinal}",
        note_id=note_id,
        ordinal=ordinal,
        text=text,
        heading=str(kw.get("heading", "")),
        start=0,
        end=len(text),
        search_text=text,
        vector=vector,
        mentions=tuple(kw.get("mentions", ())),  # type: ignore[arg-type]
    )


def note(
    title: str,
    texts: list[tuple[str, list[float]]],
    *,
    date: str = "2024-01-01",
    tags: tuple[str, ...] = (),
    links: tuple[str, ...] = (),
    sensitive: bool = False,
    record_keys: tuple[str, ...] = (),
    mentions: tuple[str, ...] = (),
    path: str | None = None,
    version: str = "1",
) -> Note:
    """A note titled ``title`` with one chunk per ``(text, vector)``."""
    path = path or f"{title}.md"
    note_id = hashlib.sha1(path.encode()).hexdigest()[:16]
    return Note(
        id=note_id,
        path=path,
        title=title,
        date=date,
        fingerprint=f"{path}:{version}",
        tags=tags,
        keys=(link_key(title),),
        record_keys=record_keys,
        frontmatter={"title": title},
        sensitive=sensitive,
        links=tuple(Link(target_key=link_key(t)) for t in links),
        chunks=tuple(
            chunk(note_id, i, text, v, mentions=mentions) for i, (text, v) in enumerate(texts)
        ),
    )


def record(collection: str, rid: str, text: str, **kw: object) -> Record:
    """A record with ``text`` as its searchable text."""
    fields = dict(kw.pop("fields", {}) or {})  # type: ignore[call-overload]
    fields.setdefault("text", text)
    return Record(collection=collection, id=rid, fields=fields, text=text, **kw)  # type: ignore[arg-type]


def write(root: Path, rel: str, text: str) -> Path:
    """Writes a dedented file under ``root``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def weaviate_get(url: str, api_key: str) -> Any:
    """GET ``url`` of a Weaviate server's REST API as JSON; None when it answers 404 (an object
    that is not there)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def pdf_bytes(pages: Sequence[str], password: str | None = None) -> bytes:
    """A real PDF with a page per text (an empty text: a page with no text layer, as a scan
    has), encrypted with ``password`` when one is given (``""``: to set permissions only)."""
    import pypdf
    from fpdf import FPDF  # a dev dependency: tests only

    writer = FPDF()
    writer.set_font("helvetica", size=11)
    for text in pages:
        writer.add_page()
        if text:
            writer.multi_cell(0, 7, text)
    data = bytes(writer.output())
    if password is None:
        return data
    locked = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    locked.encrypt(user_password=password, algorithm="RC4-128")
    out = io.BytesIO()
    locked.write(out)
    return out.getvalue()


def mail(
    subject: str, sender: str, to: str, date: str, body: str, *, html: bool = False
) -> EmailMessage:
    """One mail message; ``html``: its only part is HTML."""
    message = EmailMessage()
    message["Subject"], message["From"], message["To"], message["Date"] = subject, sender, to, date
    if html:
        message.set_content(f"<html><body><p>{body}</p></body></html>", subtype="html")
    else:
        message.set_content(body)
    return message


def write_mailbox(path: Path, messages: Sequence[EmailMessage]) -> Path:
    """An ``.mbox`` file holding ``messages``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    box = mailbox.mbox(path)
    try:
        for message in messages:
            box.add(message)
        box.flush()
    finally:
        box.close()
    return path


LEASE_PAGES = [
    "Tenancy agreement for 14 Larchfield Road between Graham Ellis and the tenant.",
    "",  # a scanned page: no text layer
    "The deposit of 1,150 GBP is protected by the Deposit Protection Service.\n"
    "# 4. Notice\nEither party gives two months' notice in writing.",
]
CLIPPING = """<html><head><title>Kombucha at home | Brew Journal</title>
<meta name="date" content="2025-04-02"></head><body>
<nav>Home | Recipes | About | Subscribe</nav>
<article><h1>Kombucha at home</h1>
<p>Steep eight black tea bags in 3.5 litres of water, add 200 g of sugar, and let it cool
before the SCOBY goes in.</p>
<p>The second ferment takes three days at room temperature with sliced ginger.</p></article>
<footer>Copyright 2025 Brew Journal. All rights reserved.</footer></body></html>"""


def write_documents_vault(root: Path) -> Path:
    """A note, a PDF with a scanned page, a web clipping, a mail and a mailbox, and four files
    that cannot be read."""
    write(root, "Moving.md", "# Moving\nThe removal van is booked for 30 May with Shift-It.\n")
    (root / "Lease.pdf").write_bytes(pdf_bytes(LEASE_PAGES))
    (root / "clippings").mkdir()
    (root / "clippings/kombucha.html").write_text(CLIPPING)
    (root / "mail").mkdir()
    (root / "mail/Porch quote.eml").write_bytes(
        bytes(
            mail(
                "Porch quote",
                "Gord Fitzpatrick <gord@fitzcarpentry.ca>",
                "me@example.org",
                "Tue, 14 Apr 2026 09:00:00 -0300",
                "Screening the porch comes to $4,200 including materials, two weeks of work.",
            )
        )
    )
    write_mailbox(
        root / "mail/Allotment.mbox",
        [
            mail(
                "Plot rent",
                "Ron Hale <ron@allotments.example>",
                "me@example.org",
                "Sun, 08 Nov 2026 10:12:00 +0000",
                "Hi, the half-plot rent for 2027 is 55 pounds, due by 31 December.",
            ),
            mail(
                "Re: Plot rent",
                "Me <me@example.org>",
                "Ron Hale <ron@allotments.example>",
                "Mon, 09 Nov 2026 08:00:00 +0000",
                "Thanks Ron, I will pay by bank transfer on Friday.",
                html=True,
            ),
        ],
    )
    (root / "Scan.pdf").write_bytes(pdf_bytes(["", ""]))
    (root / "Locked.pdf").write_bytes(pdf_bytes(["The safe code is 4471."], password="hunter2"))
    (root / "Broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog")
    (root / "empty.html").write_text("<html><body><script>track()</script></body></html>")
    return root


ESPEAK = Path("/usr/bin/espeak-ng")
"""Debian's, as `make espeak` installs it."""
MEMO_RAMBLE = (
    "Walk memo, Saturday morning. I walked along the canal towards the old mill and back "
    "through the park. The heron was on the far bank again, standing very still in the reeds. "
    "The plumber rang while I was out. He says the boiler needs a service before the winter, "
    "and he can come on a Tuesday or a Thursday afternoon. I should ask him about the radiator "
    "in the back bedroom as well, because it still takes an hour to warm up."
)
MEMO_PADLOCK = (
    "Second thing. The allotment shed needs a new padlock. The padlock costs twelve pounds at "
    "the hardware shop on the high street."
)


def speak(path: Path, *paragraphs: str) -> Path:
    """A WAV of Debian's espeak-ng (``ESPEAK``, which the caller requires) reading
    ``paragraphs``: real, if robotic, speech, with four seconds of silence between them."""
    ssml = '<break time="4s"/>'.join(paragraphs)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [ESPEAK, "-m", "-s", "140", "-w", str(path), f"<speak>{ssml}</speak>"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return path


def to_m4a(wav: Path, m4a: Path) -> Path:
    """``wav`` encoded as AAC in an MP4 container, as a phone's voice memo is (PyAV, the
    ffmpeg inside its wheel)."""
    import av

    with av.open(str(wav)) as source, av.open(str(m4a), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=22050)
        for frame in source.decode(audio=0):
            frame.pts = None
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return m4a


async def index_vault(stub: Any, vault: Path) -> Any:
    """Runs IndexVault on a retrieval stub to the end; its summary (``IndexSummary``)."""
    last = None
    async for message in stub.IndexVault(retrieval_pb2.IndexVaultRequest(vault_path=str(vault))):
        last = message
    assert last is not None, "IndexVault sent nothing"
    assert last.HasField("summary"), "IndexVault ended without a summary"
    return last.summary

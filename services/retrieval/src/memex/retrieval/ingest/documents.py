"""What a person keeps besides Markdown (PDFs, saved web pages and clippings, mail), read as note
text; no I/O beyond the file given, no embedding. Voice memos are transcribed by ``audio.py``.

Each document becomes Markdown the note pipeline already reads (frontmatter, headings, chunks),
so it is indexed incrementally, forgotten, flagged sensitive and cited exactly as a note is:
- a PDF has a section per page headed ``p. N``, so every chunk lies on one page and its citation
  names it (``[[Lease.pdf]] p. 3``); pages without text (scans) are named in a warning;
- a saved web page keeps its main text only (trafilatura: no menus, footers or comments), titled
  as the page is;
- a mail (``.eml``) or a mailbox (``.mbox``) has a section per message headed by its subject,
  sender and date, whose From, To and Date lines stay in the text, so the people in it are found
  as mentions like any other.

A file that cannot be read (corrupt, encrypted, no text at all) is skipped with a reason that
says what to do; it never stops the index.
"""

from __future__ import annotations

import email
import email.utils
import io
import logging
import mailbox
import re
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage
from pathlib import Path, PurePosixPath

import pypdf
import trafilatura
import yaml
from pypdf.errors import PyPdfError
from trafilatura.utils import decode_file

# pypdf logs every malformed object it works around (a person's PDFs often are malformed), and
# trafilatura each page it finds no text in; the index report says what was skipped and why.
for _chatty in ("pypdf", "trafilatura"):
    logging.getLogger(_chatty).setLevel(logging.ERROR)

MAX_DOCUMENT_BYTES = 1024 * 1024 * 1024
"""Larger documents are skipped (the default of ``MEMEX_RETRIEVAL_MAX_DOCUMENT_BYTES``)."""
EXTRACTOR_VERSION = "1"
"""Part of every document's fingerprint: a change here re-reads every document."""
AUDIO_SUFFIXES = frozenset({".m4a", ".mp3", ".wav", ".ogg", ".opus", ".webm", ".flac"})
"""Voice memos, transcribed by ``audio.py``."""
DOCUMENT_SUFFIXES = frozenset({".pdf", ".html", ".htm", ".eml", ".mbox"}) | AUDIO_SUFFIXES
PAGE_HEADING = re.compile(r"^p\. (\d+)$")
TIME_HEADING = re.compile(r"^(?:\d+:)?\d\d:\d\d$")
# A line of extracted text that Markdown would read as a heading or frontmatter fence.
_MARKUP_LINE = re.compile(r"^(\s{0,3})(#|---)", re.MULTILINE)


@dataclass(frozen=True)
class Extracted:
    """A document read as note text, or the reason it was not."""

    text: str | None
    """Markdown with frontmatter; None when the file is skipped."""
    reason: str = ""
    """Why the file is skipped (``text`` None)."""
    warnings: tuple[str, ...] = ()


def is_document(rel: str) -> bool:
    """Whether the vault path is a document this module reads (by its suffix)."""
    return PurePosixPath(rel).suffix.lower() in DOCUMENT_SUFFIXES


def content_id(sha256: str) -> str:
    """What stands for a document's content where a note's text would (fingerprints and the
    tombstones of forgotten files): its bytes' SHA-256, so an unchanged file is never parsed or
    transcribed again."""
    return f"memex-document:{sha256}"


def locator(path: str, heading: str) -> str:
    """What a citation of a chunk adds after ``[[title]]``: the page of a PDF (`` p. 3``), the
    time in a voice memo (`` 02:41``), the message of a mailbox; nothing for a note."""
    suffix = PurePosixPath(path).suffix.lower()
    if suffix == ".pdf" and PAGE_HEADING.match(heading):
        return f" {heading}"
    if suffix in AUDIO_SUFFIXES and TIME_HEADING.match(heading):
        return f" {heading}"
    if suffix == ".mbox" and heading:
        return f" ({heading.split(' > ')[0]})"
    return ""


def extract(path: Path, data: bytes) -> Extracted:
    """The document at ``path`` (whose bytes are ``data``) as note text; see the module doc.
    Not a voice memo: those need a model (``audio.Transcriber``)."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _pdf(path.name, data)
    if suffix in (".html", ".htm"):
        return _html(path.name, data)
    if suffix == ".eml":
        message = email.message_from_bytes(data, policy=policy.default)
        assert isinstance(message, EmailMessage)  # policy.default makes EmailMessage
        return _mail(str(message["subject"] or path.stem), [message])
    if suffix == ".mbox":
        try:
            # mailbox reads only from a path; it writes nothing back unless told to.
            box = mailbox.mbox(path, create=False)
            try:
                messages = [_as_email(m) for m in box]
            finally:
                box.close()
        except (OSError, mailbox.Error) as exc:
            return Extracted(None, f"not a readable mailbox: {exc}")
        return _mail(path.name, messages)
    return Extracted(None, f"not a document memex reads ({suffix})")


def note_markdown(title: str, date: datetime | None, sections: list[tuple[str, str]]) -> str:
    """Markdown with frontmatter (a title and a date: no property a chunk would have to carry):
    one ``##`` section per (heading, Markdown text)."""
    front: dict[str, object] = {"title": title}
    if date is not None:
        front["date"] = date.date().isoformat()
    body = "\n\n".join(
        f"## {heading}\n\n{text.strip()}" if heading else text.strip() for heading, text in sections
    )
    return f"---\n{yaml.safe_dump(front, allow_unicode=True, sort_keys=False)}---\n\n{body}\n"


def escape(text: str) -> str:
    r"""Plain extracted text whose lines Markdown would take as headings (``# x``, a line under
    ``---``) escaped with a backslash, so only the sections made here are headings."""
    return _MARKUP_LINE.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", text.strip())


def _pages(numbers: list[int]) -> str:
    """``1-3, 7`` for [1, 2, 3, 7]."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)


def _pdf(name: str, data: bytes) -> Extracted:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _opens_without_password(reader):
            return Extracted(None, "an encrypted PDF: save a copy without its password to index it")
        sections: list[tuple[str, str]] = []
        blank: list[int] = []
        for number, page in enumerate(reader.pages, 1):
            text = (page.extract_text() or "").strip()
            if text:
                sections.append((f"p. {number}", escape(text)))
            else:
                blank.append(number)
        created = reader.metadata.creation_date if reader.metadata else None
    except (PyPdfError, ValueError, TypeError, KeyError, OSError) as exc:
        return Extracted(None, f"not a readable PDF: {exc or type(exc).__name__}")
    if not sections:
        return Extracted(
            None, "a PDF without text (scanned pages?): memex reads text, not images of it"
        )
    warnings = (f"pages without text, not indexed (scanned?): {_pages(blank)}",) if blank else ()
    return Extracted(note_markdown(name, created, sections), warnings=warnings)


def _opens_without_password(reader: pypdf.PdfReader) -> bool:
    """Many PDFs are encrypted with an empty password only to set permissions."""
    try:
        return bool(reader.decrypt(""))
    except (PyPdfError, NotImplementedError):  # a cipher pypdf needs `cryptography` for
        return False


def _html(name: str, data: bytes) -> Extracted:
    html = decode_file(data)  # the charset the page declares, else a detected one
    text = trafilatura.extract(html, output_format="markdown", include_comments=False)
    if not text or not text.strip():
        return Extracted(None, "a web page without main text (empty, or only scripts)")
    meta = trafilatura.extract_metadata(html)
    title = (meta.title if meta and meta.title else "") or PurePosixPath(name).stem
    try:
        date = datetime.fromisoformat(meta.date) if meta and meta.date else None
    except ValueError:
        date = None
    # The page's own headings stay: they are the sections a citation's excerpt comes from.
    return Extracted(note_markdown(_one_line(title), date, [("", text)]))


def _as_email(message: mailbox.mboxMessage) -> EmailMessage:
    parsed = email.message_from_bytes(message.as_bytes(), policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def _mail(title: str, messages: list[EmailMessage]) -> Extracted:
    sections: list[tuple[str, str]] = []
    dates: list[datetime] = []
    unreadable: list[str] = []
    for number, message in enumerate(messages, 1):
        try:
            heading, text, when = _message(message)
        except Exception as exc:  # one broken message must not cost the rest of the mailbox
            unreadable.append(f"message {number} could not be read ({exc}); it is left out")
            continue
        sections.append((heading, text))
        dates += [when] if when else []
    if not sections:
        return Extracted(None, "a mailbox without a readable message")
    latest = max(dates, key=datetime.timestamp, default=None)
    text = note_markdown(_one_line(title), latest, sections)
    return Extracted(text, warnings=tuple(unreadable))


def _message(message: EmailMessage) -> tuple[str, str, datetime | None]:
    """(heading, text, date) of one message: the heading names its subject, sender and
    day; the text keeps its From, To, Cc and Date lines above the body."""
    when = _date(message)
    subject = _one_line(str(message["subject"] or "(no subject)"))
    byline = ", ".join([*_people(message, "from")[:1], *([f"{when:%Y-%m-%d}"] if when else [])])
    heading = f"{subject} — {byline}" if byline else subject
    lines = [
        f"{header.capitalize()}: {_one_line(', '.join(map(str, values)))}"
        for header in ("from", "to", "cc")
        if (values := message.get_all(header, []))
    ]
    lines += [f"Date: {when:%-d %B %Y %H:%M}"] if when else []
    text = escape("\n".join(lines) + "\n\n" + _body(message))
    return heading, text, when


def _people(message: EmailMessage, header: str) -> list[str]:
    """The names (else addresses) in a header."""
    values = [str(v) for v in message.get_all(header, [])]
    found = email.utils.getaddresses(values)
    return [name or address for name, address in found if name or address]


def _date(message: EmailMessage) -> datetime | None:
    """When the message was sent, as the sender's clock read (the time the person saw)."""
    try:
        return email.utils.parsedate_to_datetime(str(message["date"])) if message["date"] else None
    except (TypeError, ValueError):
        return None


def _body(message: EmailMessage) -> str:
    """The message's text: its plain part, else its HTML part's main text."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):  # an unknown charset, a broken transfer encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    if part.get_content_subtype() == "html":
        content = trafilatura.extract(content, include_comments=False) or ""
    return str(content).strip()


def _one_line(text: str) -> str:
    return " ".join(text.split())

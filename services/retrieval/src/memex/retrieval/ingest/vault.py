"""Finding a vault's notes and record files, and reading them safely.

Hidden folders and files (``.obsidian``, ``.trash``, ``.git``) are never entered; a file is a
note when the include patterns take it (Markdown, and the documents of ``documents.py``), else it
is an attachment and left alone, and neither is a template: the folders Obsidian's
Templates and Templater plugins keep them in, and the daily-note template, as the vault's own
``.obsidian`` settings name them (``templates``). Symlinks are followed once, with loops
detected by the real path. Unreadable, binary, huge or non-UTF-8 files are skipped with a reason,
never raised.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path, PurePosixPath
from typing import TypeVar

from memex.retrieval.ingest.documents import content_id, is_document
from memex.shared.errors import InvalidArgument

T = TypeVar("T")


@dataclass(frozen=True)
class VaultFile:
    """A file found in the vault."""

    rel: str
    """Relative path with ``/`` separators."""
    path: Path


@dataclass(frozen=True)
class Skipped:
    """A file left out, and why."""

    rel: str
    reason: str


@dataclass
class Scan:
    """What a walk of the vault found."""

    notes: list[VaultFile]
    record_files: list[VaultFile]
    skipped: list[Skipped]


def check_vault(path: str) -> Path:
    """The vault folder as an absolute path, or InvalidArgument saying what is wrong."""
    if not path:
        raise InvalidArgument("vault_path is empty: give the folder of your notes")
    vault = Path(path).expanduser()
    if not vault.is_absolute():
        raise InvalidArgument(f"vault path {path!r} must be absolute")
    if not vault.exists():
        raise InvalidArgument(f"vault path {path} does not exist")
    if not vault.is_dir():
        raise InvalidArgument(f"vault path {path} is not a folder")
    if not os.access(vault, os.R_OK | os.X_OK):
        raise InvalidArgument(f"vault path {path} is not readable")
    return vault.resolve()


# Where Obsidian's plugins keep the vault's templates: (settings file, key, what it names).
_TEMPLATE_SETTINGS = (
    (".obsidian/templates.json", "folder", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder", "folder"),
    (".obsidian/daily-notes.json", "template", "file"),
)


def templates(vault: Path) -> dict[str, str]:
    """Vault-relative paths of template folders and files (a file with ``.md``), each with the
    reason it is not a note, from the vault's Obsidian settings. Missing or unreadable settings
    name nothing; a setting naming the vault's root is ignored."""
    found: dict[str, str] = {}
    for settings, key, kind in _TEMPLATE_SETTINGS:
        try:
            value = json.loads((vault / settings).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        rel = value.strip().strip("/") if isinstance(value, str) else ""
        if not rel or rel.startswith("."):
            continue
        if kind == "file" and not rel.endswith(".md"):
            rel += ".md"
        found[rel] = f"an Obsidian template ({settings})"
    return found


def _matches(rel: str, patterns: list[str]) -> bool:
    """fnmatch on the vault-relative path; ``*`` crosses folders (``*.md``, ``drafts/*``). The
    file's suffix matches in any case: cameras, phones and Windows write ``Scan.PDF``."""
    suffix = PurePosixPath(rel).suffix
    either = {rel, rel[: len(rel) - len(suffix)] + suffix.lower()}
    return any(fnmatch.fnmatchcase(name, p) for name in either for p in patterns)


def scan(vault: Path, include: list[str], exclude: list[str], records_folder: str) -> Scan:
    """Walks the vault: notes matching ``include`` and not ``exclude``; ``*.jsonl`` files directly
    in the records folder."""
    result = Scan([], [], [])
    seen: set[str] = set()
    not_notes = templates(vault)

    def walk(folder: Path, rel_folder: str) -> None:
        real = os.path.realpath(folder)
        if real in seen:
            result.skipped.append(Skipped(rel_folder or ".", "symlink loop"))
            return
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            result.skipped.append(Skipped(rel_folder or ".", f"unreadable folder: {exc.strerror}"))
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if rel in not_notes:
                result.skipped.append(Skipped(rel, not_notes[rel]))
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = entry.is_file(follow_symlinks=True)
            except OSError:
                result.skipped.append(Skipped(rel, "broken symlink"))
                continue
            if entry.is_symlink() and not (is_dir or is_file):
                result.skipped.append(Skipped(rel, "broken symlink"))
            elif is_dir:
                walk(Path(entry.path), rel)
            elif is_file:
                file = VaultFile(rel, Path(entry.path))
                if rel_folder == records_folder and entry.name.endswith(".jsonl"):
                    result.record_files.append(file)
                elif _matches(rel, exclude):
                    continue
                elif _matches(rel, include):
                    result.notes.append(file)

    walk(vault, "")
    return result


def _read_with(
    file: VaultFile, max_bytes: int, read: Callable[[BufferedReader], T]
) -> tuple[T | None, float, str]:
    """(what ``read`` makes of the open file, mtime, reason): None when the file is too large
    or unreadable, with the reason."""
    try:
        stat = file.path.stat()
        if stat.st_size > max_bytes:
            return None, 0.0, f"too large ({stat.st_size} bytes, the limit is {max_bytes})"
        with file.path.open("rb") as opened:
            return read(opened), stat.st_mtime, ""
    except OSError as exc:
        return None, 0.0, f"unreadable: {exc.strerror or exc}"


def read_bytes(file: VaultFile, max_bytes: int) -> tuple[bytes | None, float, str]:
    """(data, mtime, reason): data is None when the file is skipped, with the reason."""
    return _read_with(file, max_bytes, lambda opened: opened.read())


def read_text(file: VaultFile, max_bytes: int) -> tuple[str | None, float, str]:
    """(text, mtime, reason): text is None when the file is skipped, with the reason; a file
    that is not UTF-8 is read anyway (``decode``), and the reason then says how."""
    data, mtime, reason = read_bytes(file, max_bytes)
    if data is None:
        return None, mtime, reason
    if b"\x00" in data[:8192]:
        return None, mtime, "binary file"
    text, how = decode(data)
    return text.replace("\r\n", "\n"), mtime, how


def read_content(file: VaultFile, max_bytes: int) -> tuple[str | None, float, str]:
    """What identifies a file's content, as fingerprints and tombstones compare it: a note's
    text (``read_text``), or a document's digest (``documents.content_id``)."""
    if not is_document(file.rel):
        return read_text(file, max_bytes)
    # Streamed: a long recording need not sit in memory to be recognised.
    digest, mtime, reason = _read_with(
        file, max_bytes, lambda opened: hashlib.file_digest(opened, "sha256").hexdigest()
    )
    return (content_id(digest) if digest is not None else None), mtime, reason


# A UTF-8 sequence of two to four bytes: a file that has one is UTF-8 with a few bad bytes.
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def decode(data: bytes) -> tuple[str, str]:
    """(text, how): UTF-8 (a BOM dropped), how ""; else, as Obsidian still shows such a note,
    Windows-1252 when no byte sequence in it is UTF-8 (notes saved by older Windows editors:
    "café" as one byte ``\\xe9``), or UTF-8 with U+FFFD for the bytes that are not."""
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        where = f"invalid UTF-8 at byte {exc.start}"
    if not _UTF8_MULTIBYTE.search(data):
        try:
            return data.decode("cp1252"), f"{where}; read as Windows-1252"
        except UnicodeDecodeError:  # five bytes cp1252 leaves undefined
            return data.decode("latin-1"), f"{where}; read as Latin-1"
    return data.decode("utf-8-sig", errors="replace"), f"{where}; bad bytes shown as \ufffd"


def other_vault_warning(held: str, vault: str, removed: int) -> str:
    """What a run says when it took the place of another vault: a memory holds one vault (per
    tenant), and a run removes the notes its folder does not have. That is what "try the demo,
    then index my notes" wants; two vaults a person means to keep need a tenant each. A vault
    moved or renamed keeps its notes' relative paths, removes nothing and says nothing."""
    return (
        f"this memory held the vault {held}; its {removed} notes that {vault} does not have "
        "were removed. To keep two vaults, index each as its own tenant (--tenant NAME)"
    )

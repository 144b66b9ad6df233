"""DeleteNote (a forget): remove a note from the store, prove it is gone, keep it gone.

A forget (no gRPC here) resolves the note (episode id, vault path or title), counts what the
store holds of it (``Store.note_traces``) and runs lookups and searches that find it, deletes it
(``Store.delete_notes``: chunks, vectors, keyword rows, links, keys, record links, mentions),
records a tombstone for its file (``ingest/tombstones.py``), then counts and searches again. The
receipt has both sets of numbers; the forget is complete when everything after is 0.

Every version of the note memex kept for reading memory as of a date goes too (``history``):
its archived copies and its ledger entries, counted like the rest.

What a forget leaves, by design: links *to* the note from other notes (they are those notes'
text; they now resolve to nothing) and the records a note stands for (records come from the
records files or the API, not from notes; only the note-to-record link goes).
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from memex.retrieval.history.archive import Archive
from memex.retrieval.ingest import tombstones
from memex.retrieval.ingest import vault as vault_io
from memex.retrieval.note_text import assemble
from memex.retrieval.search import Filters, Query, Searcher
from memex.retrieval.store.base import NoteMeta, SearchFilter, Store
from memex.retrieval.store.counts import TRACE_KINDS
from memex.retrieval.store.links import link_key
from memex.shared.errors import InvalidArgument, NotFound

log = logging.getLogger(__name__)

PHRASE_WORDS = 12
VERSIONS = "kept versions (ledger entries and archived copies, docs/as-of.md)"
KEYWORD_DEPTH = 1000
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Count:
    """One receipt line: things of one kind removed from a store, and how many remain."""

    store: str
    what: str
    removed: int
    remaining: int


@dataclass(frozen=True)
class Check:
    """A lookup or search for the note, before and after the delete."""

    store: str
    description: str
    found_before: int
    found_after: int


@dataclass
class ForgetReceipt:
    """What a forget did (or, on a dry run, would do)."""

    note: NoteMeta
    chunk_ids: list[str]
    text: str
    """The note's text as indexed; only filled on a dry run."""
    dry_run: bool
    counts: list[Count] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    file_present: bool = False
    tombstoned: bool = False
    scrubbed: bool = False
    """The store's files were scrubbed of deleted bytes (``Store.scrub``)."""


def distinctive_phrase(text: str, title: str) -> str:
    """A phrase of the note a keyword search must find: its sentence with the most long words
    (four letters or more, which are rare across notes), at most ``PHRASE_WORDS`` of them."""
    best: list[str] = []
    for sentence in _SENTENCE.split(text):
        words = [w for w in _WORD.findall(sentence) if len(w) >= 4 and not w.isdigit()]
        if len(words) > len(best):
            best = words
    return " ".join(best[:PHRASE_WORDS]) or title


class Forgetter:
    """Forgets notes of a store, checking with the store's own reads and the real searcher."""

    def __init__(
        self, store: Store, searcher: Searcher, archive: Archive, backend: str, max_k: int
    ) -> None:
        self._store = store
        self._archive = archive
        self._searcher = searcher
        self._where = f"retrieval ({backend})"
        self._max_k = max_k

    async def resolve(self, tenant: str, ref: str) -> NoteMeta:
        """The note ``ref`` names: an episode id, a vault-relative path (with or without
        ``.md``; an absolute path inside the last indexed vault works too), or a title that
        exactly one note has."""
        ref = ref.strip()
        if not ref:
            raise InvalidArgument("name the note to forget: its episode id, vault path or title")
        found = await self._store.get_notes(tenant, [ref])
        if ref in found:
            return found[ref]
        paths = await self._store.note_fingerprints(tenant)
        root = await self._store.get_meta(tenant, tombstones.VAULT_META)
        rel = ref
        if root and Path(ref).is_absolute():
            try:
                rel = Path(ref).relative_to(root).as_posix()
            except ValueError:
                rel = ref
        for candidate in (rel, f"{rel}.md"):
            if candidate in paths:
                note_id = paths[candidate][0]
                return (await self._store.get_notes(tenant, [note_id]))[note_id]
        if "/" in ref:  # a path that names no note: never fall back to a same-titled note elsewhere
            raise NotFound(
                f"no note at the vault path {ref!r}; `memex search` shows notes with their paths"
            )
        by_key = (await self._store.notes_by_key(tenant, [link_key(ref)])).get(link_key(ref), [])
        titled = [n for n in by_key if n.title.casefold() == ref.casefold()] or by_key
        if len(titled) == 1:
            return titled[0]
        if titled:
            listed = ", ".join(sorted(n.path for n in titled))
            raise InvalidArgument(
                f"{len(titled)} notes are named {ref!r} ({listed}); give the path of the one "
                "to forget"
            )
        raise NotFound(
            f"no note has the episode id, vault path or title {ref!r}; `memex search` shows "
            "notes with their paths"
        )

    async def forget(self, tenant: str, ref: str, *, dry_run: bool = False) -> ForgetReceipt:
        """Forgets the note ``ref`` names (see the module doc); a dry run deletes nothing and
        returns the note's text, so the caller can find quotes of it in its own stores."""
        meta = await self.resolve(tenant, ref)
        chunks = await self._store.note_chunks(tenant, meta.id)
        chunk_ids = [c.id for c in chunks]
        text = assemble(chunks)
        phrase = distinctive_phrase(text, meta.title)
        before_traces = await self._store.note_traces(tenant, meta.id, chunk_ids)
        before = await self._look(tenant, meta, chunk_ids, phrase)
        versions = await self._archive.kept_versions(tenant, meta.id)
        kept = await self._archive.note_traces(tenant, meta.id, versions)
        receipt = ForgetReceipt(meta, chunk_ids, text if dry_run else "", dry_run)
        receipt.file_present, content = await self._vault_file(tenant, meta.path)
        if dry_run:
            receipt.counts = [
                Count(self._where, kind, before_traces.get(kind, 0), before_traces.get(kind, 0))
                for kind in TRACE_KINDS
            ]
            receipt.counts.append(Count(self._where, VERSIONS, kept, kept))
            receipt.checks = [Check(self._where, d, n, n) for d, n in before]
            return receipt
        await self._store.delete_notes(tenant, [meta.id])
        await self._archive.forget_note(tenant, versions)
        if content is not None:
            forgotten = await tombstones.load(self._store, tenant)
            forgotten[tombstones.path_key(meta.path)] = tombstones.content_key(content)
            await tombstones.save(self._store, tenant, forgotten)
            receipt.tombstoned = True
        receipt.scrubbed = await self._store.scrub(tenant)
        after_traces = await self._store.note_traces(tenant, meta.id, chunk_ids)
        after = dict(await self._look(tenant, meta, chunk_ids, phrase))
        receipt.counts = [
            Count(
                self._where,
                kind,
                max(0, before_traces.get(kind, 0) - after_traces.get(kind, 0)),
                after_traces.get(kind, 0),
            )
            for kind in TRACE_KINDS
        ]
        left = await self._archive.note_traces(tenant, meta.id, versions)
        receipt.counts.append(Count(self._where, VERSIONS, max(0, kept - left), left))
        receipt.checks = [Check(self._where, d, n, after.get(d, 0)) for d, n in before]
        remaining = [c for c in receipt.counts if c.remaining] + [
            c for c in receipt.checks if c.found_after
        ]
        if remaining:
            log.error("forget left traces of a note: %s", remaining)
        return receipt

    async def _look(
        self, tenant: str, meta: NoteMeta, chunk_ids: list[str], phrase: str
    ) -> list[tuple[str, int]]:
        """Every way a reader could still reach the note, with how many results are the note's:
        lookups by id, a keyword search of the store, and the service's hybrid search (vector,
        keyword and graph channels, sensitive notes included) for a phrase and for the title."""
        mine = set(chunk_ids)
        found: list[tuple[str, int]] = [
            ("lookup by episode id", len(await self._store.get_notes(tenant, [meta.id]))),
            ("lookup of its chunks by id", len(await self._store.get_chunks(tenant, chunk_ids))),
        ]
        words = len(phrase.split())
        hits = await self._store.search_chunks_keyword(
            tenant, phrase, KEYWORD_DEPTH, SearchFilter()
        )
        found.append(
            (
                f"keyword search for a distinctive phrase of the note ({words} words)",
                sum(h.id in mine for h in hits),
            )
        )
        for label, text in (("that phrase", phrase), ("its title", meta.title)):
            result = await self._searcher.search(
                Query(
                    tenant=tenant,
                    text=text,
                    filters=Filters(include_sensitive=True),
                    k=self._max_k,
                )
            )
            found.append(
                (
                    f"hybrid search (vector, keyword, graph) for {label}",
                    sum(i.episode_id == meta.id or i.id in mine for i in result.items),
                )
            )
        return found

    async def _vault_file(self, tenant: str, rel: str) -> tuple[bool, str | None]:
        """(whether the note's file is in the last indexed vault, its text as the indexer reads
        it, for the tombstone). False and None when the vault is unknown or the file is gone."""
        root = await self._store.get_meta(tenant, tombstones.VAULT_META)
        if not root:
            return False, None
        path = Path(root) / rel
        exists = await asyncio.to_thread(path.is_file)
        if not exists:
            return False, None
        text, _, _ = await asyncio.to_thread(
            vault_io.read_content, vault_io.VaultFile(rel=rel, path=path), 1 << 40
        )
        return True, text

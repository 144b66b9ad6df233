"""``memex index``: bring the store in line with a vault, incrementally and crash-safely.

Order of work: record files (entities first, so notes can mention them), then notes in batches
(embed, then one atomic ``upsert_note`` per note), then removals, then entity-mention refresh.
Each note is written whole or not at all and carries its fingerprint, so a run killed at any
point is simply resumed by the next one: unchanged notes are skipped, nothing is duplicated.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memex.retrieval import metrics, note_names
from memex.retrieval.embedder import MODEL_META, Embedder
from memex.retrieval.history.archive import Archive, NoteWrite
from memex.retrieval.history.versions import content_key
from memex.retrieval.ingest import documents, tombstones
from memex.retrieval.ingest import vault as vault_io
from memex.retrieval.ingest.audio import Transcriber
from memex.retrieval.ingest.notes import (
    PreparedNote,
    Sensitivity,
    fingerprint,
    note_id,
    prepare,
    with_vectors,
)
from memex.retrieval.ingest.records_io import entity_matcher, parse_jsonl
from memex.retrieval.names import NameMatcher
from memex.retrieval.store.base import Record, SearchFilter, Store

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]
MATCHER_META = "entity-names"


@dataclass
class IndexSummary:
    """What one indexing run did."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    chunks_embedded: int = 0
    records_upserted: int = 0
    records_removed: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0


@dataclass(frozen=True)
class IndexOptions:
    """The indexer's settings (from RetrievalSettings)."""

    include: list[str]
    exclude: list[str]
    records_folder: str
    collections: list[str]
    sensitive_collections: list[str]
    sensitivity: Sensitivity
    max_file_bytes: int
    embed_batch: int
    concurrency: int = 2
    max_document_bytes: int = documents.MAX_DOCUMENT_BYTES
    whisper_model_dir: Path | None = None
    """The Whisper model that transcribes voice memos; None: they are skipped."""
    whisper_threads: int = 0


class Indexer:
    """Indexes vaults into a store through an embedder."""

    def __init__(self, store: Store, embedder: Embedder, options: IndexOptions) -> None:
        self._store = store
        self._embedder = embedder
        self._opt = options
        self._transcriber = (
            Transcriber(options.whisper_model_dir, options.whisper_threads)
            if options.whisper_model_dir is not None
            else None
        )
        self._inflight = 0
        self._busy_since = 0.0
        self.archive = Archive(store, self._embed_documents, lambda: embedder.model_id)
        """Keeps the versions notes and records replace (``history``)."""

    async def _embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embeds archived versions (their time is not an index run's embedding time)."""
        return await self._embed(texts, IndexSummary())

    async def _embed(self, texts: list[str], summary: IndexSummary) -> list[list[float]]:
        """Embeds documents; ``summary.embed_seconds`` gains the wall time during which at least
        one embedding call was in flight (concurrent calls overlap, so they are not summed)."""
        if self._inflight == 0:
            self._busy_since = time.perf_counter()
        self._inflight += 1
        try:
            vectors = await self._embedder.embed(texts, "document")
        finally:
            self._inflight -= 1
            if self._inflight == 0:
                summary.embed_seconds += time.perf_counter() - self._busy_since
        return [list(map(float, row)) for row in vectors]

    async def run(
        self, tenant: str, vault_path: str, *, full: bool = False, progress: Progress | None = None
    ) -> IndexSummary:
        """Indexes the vault at ``vault_path`` for ``tenant``; see the module doc."""
        started = time.perf_counter()
        summary = IndexSummary()
        vault = vault_io.check_vault(vault_path)
        opt = self._opt
        scan = await asyncio.to_thread(
            vault_io.scan, vault, opt.include, opt.exclude, opt.records_folder
        )
        summary.skipped += [(s.rel, s.reason) for s in scan.skipped]
        held = await self._store.get_meta(tenant, tombstones.VAULT_META)
        # Remembered so a forget can say whether the note's file is still in the vault.
        await self._store.set_meta(tenant, tombstones.VAULT_META, str(vault))
        model = self._embedder.model_id
        indexed_with = await self._store.get_meta(tenant, MODEL_META)
        if indexed_with and indexed_with != model:
            # Notes and record files re-embed through their fingerprints (they hash the model
            # id); records written through the API have no file to compare, so re-embed them.
            await self._reembed_api_records(tenant, summary)
            await self.archive.reembed(tenant)
        await self._sync_records(tenant, scan.record_files, summary, full)
        matcher = await entity_matcher(self._store, tenant)
        await self._sync_notes(tenant, scan.notes, matcher, summary, full, progress)
        await self.refresh_mentions(tenant, matcher)
        if summary.added or summary.updated or summary.removed:
            await note_names.touch(self._store, tenant)
        if held and held != str(vault) and summary.removed:
            summary.warnings.append(vault_io.other_vault_warning(held, str(vault), summary.removed))
        # Only now is every vector of this model: searches refused until here (check_model).
        await self._store.set_meta(tenant, MODEL_META, model)
        summary.seconds = time.perf_counter() - started
        for outcome in ("added", "updated", "removed", "unchanged"):
            metrics.NOTES_INDEXED.labels(outcome).inc(getattr(summary, outcome))
        metrics.NOTES_INDEXED.labels("skipped").inc(len(summary.skipped))
        metrics.CHUNKS_EMBEDDED.inc(summary.chunks_embedded)
        return summary

    # -- records -------------------------------------------------------------------------------
    async def _sync_records(
        self, tenant: str, files: list[vault_io.VaultFile], summary: IndexSummary, full: bool
    ) -> None:
        stored = await self._store.record_sources(tenant)
        present: set[str] = set()
        for file in files:
            collection = PurePosixPath(file.rel).stem
            if collection not in self._opt.collections:
                summary.skipped.append(
                    (file.rel, f"collection {collection!r} is not in the allowlist")
                )
                continue
            text, _ = await _read(file, self._opt.max_file_bytes * 16, summary)
            if text is None:
                continue
            present.add(file.rel)
            key = f"records-file:{file.rel}"
            digest = fingerprint(text, self._embedder.model_id, self._opt.sensitivity)
            if not full and await self._store.get_meta(tenant, key) == digest:
                continue
            records, warnings = parse_jsonl(
                text, collection, file.rel, self._opt.sensitive_collections
            )
            summary.warnings += warnings
            gone = stored.get(file.rel, set()) - {r.ref for r in records}
            await self.upsert_records(tenant, records, summary)
            await self._delete_refs(tenant, gone, summary)
            await self._store.set_meta(tenant, key, digest)
        for source, refs in stored.items():
            if source != "api" and source not in present:
                await self._delete_refs(tenant, refs, summary)
                await self._store.set_meta(tenant, f"records-file:{source}", "")

    async def _reembed_api_records(self, tenant: str, summary: IndexSummary) -> None:
        refs = (await self._store.record_sources(tenant)).get("api", set())
        if refs:
            records = await self._store.get_records(tenant, sorted(refs))
            await self.upsert_records(tenant, list(records.values()), summary)

    async def _delete_refs(self, tenant: str, refs: set[str], summary: IndexSummary) -> None:
        by_collection: dict[str, list[str]] = {}
        for ref in refs:
            collection, _, rid = ref.partition(":")
            by_collection.setdefault(collection, []).append(rid)
        await self.archive.before_record_removal(tenant, sorted(refs))
        for collection, ids in by_collection.items():
            summary.records_removed += await self._store.delete_records(tenant, collection, ids)

    async def upsert_records(
        self, tenant: str, records: list[Record], summary: IndexSummary | None = None
    ) -> int:
        """Embeds and stores records (also used by the UpsertRecords RPC)."""
        batch = self._opt.embed_batch
        written = 0
        for i in range(0, len(records), batch):
            part = records[i : i + batch]
            texts = [r.text for r in part]
            vectors = await self._embed(texts, summary or IndexSummary())
            part = [dataclasses.replace(r, vector=v) for r, v in zip(part, vectors, strict=True)]
            await self.archive.before_records(tenant, part)
            written += await self._store.upsert_records(tenant, part)
        if summary is not None:
            summary.records_upserted += written
        return written

    # -- entities and mentions -----------------------------------------------------------------
    async def refresh_mentions(self, tenant: str, matcher: NameMatcher) -> None:
        """Recomputes the mentions of entities whose names changed since the last run (notes
        indexed before an entity existed learn about it here)."""
        before = json.loads(await self._store.get_meta(tenant, MATCHER_META) or "{}")
        changed = {e for e, names in matcher.names.items() if before.get(e) != names}
        changed |= set(before) - set(matcher.names)
        for entity in sorted(changed):
            names = matcher.names.get(entity, [])
            chunk_ids: list[str] = []
            if names:
                single = NameMatcher({entity: names})
                hits = await self._store.search_chunks_keyword(
                    tenant, " ".join(names), 100_000, SearchFilter()
                )
                views = await self._store.get_chunks(tenant, [h.id for h in hits])
                chunk_ids = [cid for cid, view in views.items() if single(view.text)]
            await self._store.set_entity_mentions(tenant, entity, chunk_ids)
        await self._store.set_meta(tenant, MATCHER_META, json.dumps(matcher.names, sort_keys=True))

    # -- notes ---------------------------------------------------------------------------------
    async def _sync_notes(
        self,
        tenant: str,
        files: list[vault_io.VaultFile],
        matcher: NameMatcher,
        summary: IndexSummary,
        full: bool,
        progress: Progress | None,
    ) -> None:
        stored = await self._store.note_fingerprints(tenant)
        forgotten = tombstones.Tombstones(await tombstones.load(self._store, tenant))
        ledger = await self.archive.note_ledger(tenant)
        unrecorded: list[NoteWrite] = []  # unchanged notes indexed before versions were kept
        kept: set[str] = set()
        total, done = len(files), 0
        batch: list[tuple[PreparedNote, NoteWrite]] = []
        pending: set[asyncio.Task[None]] = set()
        gate = asyncio.Semaphore(self._opt.concurrency)

        async def flush(items: list[tuple[PreparedNote, NoteWrite]]) -> None:
            nonlocal done
            async with gate:
                texts = [t for prepared, _ in items for t in prepared.texts]
                vectors = await self._embed(texts, summary) if texts else []
                await self.archive.before_notes(tenant, ledger, [w for _, w in items])
                offset = 0
                for prepared, write in items:
                    is_new = not write.replaces
                    count = len(prepared.texts)
                    note = with_vectors(prepared, vectors[offset : offset + count])
                    offset += count
                    await self._store.upsert_note(tenant, note)
                    summary.chunks_embedded += count
                    summary.added += is_new
                    summary.updated += not is_new
                    done += 1
                    if progress:
                        progress(done, total, prepared.note.path)

        for file in files:
            document = documents.is_document(file.rel)
            limit = self._opt.max_document_bytes if document else self._opt.max_file_bytes
            text, mtime = await _read(file, limit, summary)  # a document: its content_id
            if text is None:
                total -= 1
                continue
            if forgotten.skips(file.rel, text):  # see ingest/tombstones.py
                summary.skipped.append((file.rel, tombstones.SKIP_REASON))
                total -= 1
                continue
            kept.add(file.rel)
            version = f"\x00{documents.EXTRACTOR_VERSION}" if document else ""
            fp = fingerprint(text + version, self._embedder.model_id, self._opt.sensitivity)
            write = NoteWrite(
                note_id(file.rel), file.rel, content_key(text + version), mtime, file.rel in stored
            )
            if not full and stored.get(file.rel, ("", ""))[1] == fp:
                if ledger.current(write.note_id) is None:
                    unrecorded.append(write)
                summary.unchanged += 1
                done += 1
                if progress:
                    progress(done, total, file.rel)
                continue
            try:
                prepared = await asyncio.to_thread(  # a long note parses for a while
                    self._prepare, file, text, mtime, fp, matcher, summary, limit
                )
            except Exception as exc:  # one note memex cannot read must not stop the vault
                log.exception("could not read %s as a note", file.rel)
                prepared = f"could not be read as a note: {exc}"
            if isinstance(prepared, str):
                summary.skipped.append((file.rel, prepared))
                kept.discard(file.rel)
                total -= 1
                continue
            summary.warnings += prepared.warnings
            body = "\x00".join(p.text for p in prepared.pieces)
            batch.append((prepared, dataclasses.replace(write, body=body)))
            if sum(len(p.texts) for p, _ in batch) >= self._opt.embed_batch:
                pending.add(asyncio.create_task(flush(batch)))
                batch = []
                if len(pending) >= self._opt.concurrency * 2:  # bound what waits in memory
                    finished, pending = await asyncio.wait(
                        pending, return_when=asyncio.FIRST_COMPLETED
                    )
                    await _settle(finished, pending)
        if batch:
            pending.add(asyncio.create_task(flush(batch)))
        if pending:
            await _settle(set(), pending, wait=True)
        if forgotten.changed:
            await tombstones.save(self._store, tenant, forgotten.entries)
        await self.archive.open_unrecorded(tenant, ledger, unrecorded)
        gone = [(nid, path) for path, (nid, _) in stored.items() if path not in kept]
        if gone:
            await self.archive.before_note_removal(tenant, ledger, gone)
            summary.removed += await self._store.delete_notes(tenant, [n for n, _ in gone])

    def _prepare(
        self,
        file: vault_io.VaultFile,
        text: str,
        mtime: float,
        fp: str,
        matcher: NameMatcher,
        summary: IndexSummary,
        limit: int,
    ) -> PreparedNote | str:
        """The note read from ``text``, or from the document it stands for (read, extracted or
        transcribed only now that it changed); a document memex cannot read gives the reason."""
        if documents.is_document(file.rel):
            extracted = self._extract(file, limit)
            if extracted.text is None:
                return extracted.reason
            summary.warnings += [f"{file.rel}: {warning}" for warning in extracted.warnings]
            text = extracted.text
        return prepare(file.rel, text, mtime, fp, self._opt.sensitivity, matcher)

    def _extract(self, file: vault_io.VaultFile, limit: int) -> documents.Extracted:
        if file.path.suffix.lower() in documents.AUDIO_SUFFIXES:
            if self._transcriber is None:
                return documents.Extracted(None, "voice memos are not transcribed here")
            return self._transcriber.transcribe(file.path)
        data, _, reason = vault_io.read_bytes(file, limit)
        if data is None:
            return documents.Extracted(None, reason)
        return documents.extract(file.path, data)


async def _settle(
    finished: set[asyncio.Task[None]], pending: set[asyncio.Task[None]], *, wait: bool = False
) -> None:
    """Surfaces the first failure of a batch, cancelling the rest (a later run resumes)."""
    try:
        if wait:
            await asyncio.gather(*pending)
        for task in finished:
            task.result()
    except BaseException:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise


async def _read(
    file: vault_io.VaultFile, limit: int, summary: IndexSummary
) -> tuple[str | None, float]:
    """A file's text (a document's ``content_id``) and mtime, off the event loop; None (and the
    reason in ``summary.skipped``) when it cannot be read, and a warning when it was read though
    not as UTF-8."""
    text, mtime, reason = await asyncio.to_thread(vault_io.read_content, file, limit)
    if text is None:
        summary.skipped.append((file.rel, reason))
    elif reason:
        summary.warnings.append(f"{file.rel}: {reason}")
    return text, mtime

"""EmbeddedStore: the ``Store`` protocol on SQLite + usearch, in one process, no server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import (
    ChunkView,
    Condition,
    Hit,
    Note,
    NoteMeta,
    Record,
    SearchFilter,
    Sort,
    StoreStats,
    Vector,
)
from memex.retrieval.store.embedded import keyword, queries, record_queries
from memex.retrieval.store.embedded.ann import AnnIndex
from memex.retrieval.store.embedded.catalog import ChunkCatalog
from memex.retrieval.store.embedded.keyword_index import KeywordIndex
from memex.retrieval.store.embedded.schema import connect, is_trivial
from memex.retrieval.store.filters import apply_query
from memex.shared.errors import FailedPrecondition, InvalidArgument

log = logging.getLogger(__name__)

T = TypeVar("T")
CHUNKS = "chunks"
RECORDS = "records"
# A filtered vector search scans candidates exactly when there are at most this many; beyond,
# it asks HNSW for more and more neighbours until enough pass the filter.
EXACT_CANDIDATES = 50_000


class EmbeddedStore:
    """SQLite + FTS5 + usearch + tantivy. All database work runs on one worker thread, in order."""

    def __init__(self, directory: Path, dimension: int, conn: sqlite3.Connection) -> None:
        self.dimension = dimension
        self._dir = directory
        self._conn = conn
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memex-store")
        self._ann: dict[tuple[str, str], AnnIndex] = {}
        self._keywords: dict[str, KeywordIndex] = {}
        self._catalogs: dict[str, ChunkCatalog] = {}
        self._closed = False

    @classmethod
    async def open(cls, directory: Path, dimension: int) -> EmbeddedStore:
        """Opens (creating if needed) the store in ``directory`` for vectors of ``dimension``."""
        if dimension <= 0:
            raise InvalidArgument(f"vector dimension must be positive, got {dimension}")
        try:
            (directory / "ann").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FailedPrecondition(f"cannot create the store folder {directory}: {exc}") from exc
        conn = await asyncio.to_thread(connect, str(directory / "memex.db"))
        store = cls(directory, dimension, conn)
        saved = await store._run(lambda: queries.get_meta(conn, "", "dimension"))
        if saved is not None and int(saved) != dimension:
            await store.close()
            raise FailedPrecondition(
                f"the store in {directory} holds {saved}-dimensional vectors but the embedding "
                f"model gives {dimension}; point MEMEX_RETRIEVAL_STORE_DIR elsewhere or re-index"
            )
        await store._run(lambda: queries.set_meta(conn, "", "dimension", str(dimension)))
        return store

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise FailedPrecondition("the store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def close(self) -> None:
        """Saves the ANN indexes (with the generation they reflect) and closes SQLite."""
        if self._closed:
            return

        def _close() -> None:
            for (tenant, kind), ann in self._ann.items():
                try:
                    ann.save(queries.generation(self._conn, tenant, kind))
                except Exception:  # the next open rebuilds it from SQLite
                    log.exception("could not save the ANN index %s", ann.path)
            for index in self._keywords.values():
                index.close()  # every write already committed it and named its generation
            self._conn.close()

        await asyncio.get_running_loop().run_in_executor(self._pool, _close)
        self._closed = True
        self._pool.shutdown(wait=True)

    # -- helpers (worker thread only) ----------------------------------------------------------
    def _vector(self, values: Vector) -> NDArray[np.float32]:
        array = np.asarray(values, dtype=np.float32).reshape(-1)
        if array.shape[0] != self.dimension:
            raise InvalidArgument(
                f"vector has {array.shape[0]} dimensions, the store holds {self.dimension}"
            )
        return array

    def _index(self, tenant: str, kind: str) -> AnnIndex:
        """The tenant's ANN index of ``kind``, loaded or rebuilt from SQLite on first use."""
        key = (tenant, kind)
        ann = self._ann.get(key)
        if ann is not None:
            return ann
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:24]
        ann = AnnIndex(self.dimension, self._dir / "ann" / f"{digest}-{kind}.usearch")
        if not ann.load_if_current(queries.generation(self._conn, tenant, kind)):
            keys, vectors = queries.all_vectors(self._conn, tenant, kind, self.dimension)
            log.info("rebuilding the %s ANN index of a tenant from %d vectors", kind, len(keys))
            ann.add(keys, vectors)
        self._ann[key] = ann
        return ann

    def _keyword_path(self, tenant: str) -> Path:
        digest = hashlib.sha256(tenant.encode()).hexdigest()[:24]
        return self._dir / "keyword" / f"{digest}-chunks"

    def _keyword(self, tenant: str) -> KeywordIndex:
        """The tenant's chunk keyword index, opened or rebuilt from SQLite on first use."""
        index = self._keywords.get(tenant)
        if index is not None:
            return index
        index = KeywordIndex(self._keyword_path(tenant))
        generation = queries.generation(self._conn, tenant, CHUNKS)
        if not index.load_if_current(generation, queries.search_text_count(self._conn, tenant)):
            log.info("rebuilding the keyword index of a tenant from SQLite")
            index.rebuild(queries.search_texts(self._conn, tenant), generation)
        self._keywords[tenant] = index
        return index

    def _catalog(self, tenant: str) -> ChunkCatalog:
        """The tenant's chunk catalogue, built from SQLite on first use."""
        catalog = self._catalogs.get(tenant)
        if catalog is None:
            catalog = ChunkCatalog(
                queries.catalog_notes(self._conn, tenant),
                queries.catalog_chunks(self._conn, tenant),
            )
            self._catalogs[tenant] = catalog
        return catalog

    @contextlib.contextmanager
    def _derived(self, tenant: str, kind: str) -> Iterator[None]:
        """Around a derived-index update that follows a commit: if it fails, the in-memory
        indexes (ANN, and for chunks the keyword index) are dropped and their sidecars
        invalidated, so the next use rebuilds them from SQLite, never trusting them. The chunk
        catalogue, never saved, is dropped likewise."""
        try:
            yield
        except BaseException:
            if kind == CHUNKS:
                self._catalogs.pop(tenant, None)
            ann = self._ann.pop((tenant, kind), None)
            if ann is not None:
                ann.invalidate()
            index = self._keywords.pop(tenant, None) if kind == CHUNKS else None
            if index is not None:
                index.invalidate()
                index.close()
            raise

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Runs ``fn`` in one IMMEDIATE transaction (committed, hence durable, on return)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(self._conn)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        return result

    # -- notes ---------------------------------------------------------------------------------
    async def upsert_note(self, tenant: str, note: Note) -> None:
        """See ``Store.upsert_note``: one transaction, then the ANN index follows."""
        vectors = [self._vector(c.vector) for c in note.chunks]

        def work() -> None:
            ann, words = self._index(tenant, CHUNKS), self._keyword(tenant)
            catalog = self._catalog(tenant)
            old, new = self._write(lambda c: queries.replace_note(c, tenant, note, vectors))
            with self._derived(tenant, CHUNKS):
                catalog.replace_note(note.meta(), old, new, [c.id for c in note.chunks])
                ann.remove(old)
                if new:
                    ann.add(np.asarray(new, dtype=np.uint64), np.stack(vectors))
                texts = [c.search_text for c in note.chunks]
                generation = queries.generation(self._conn, tenant, CHUNKS)
                words.replace(old, zip(new, texts, strict=True), generation)

        await self._run(work)

    async def delete_notes(self, tenant: str, note_ids: Sequence[str]) -> int:
        """See ``Store.delete_notes``."""

        def work() -> int:
            ann, words = self._index(tenant, CHUNKS), self._keyword(tenant)
            catalog = self._catalog(tenant)
            count, old = self._write(lambda c: queries.delete_notes(c, tenant, list(note_ids)))
            with self._derived(tenant, CHUNKS):
                catalog.delete_notes(note_ids, old)
                ann.remove(old)
                words.replace(old, [], queries.generation(self._conn, tenant, CHUNKS))
            return count

        return await self._run(work)

    async def note_fingerprints(self, tenant: str) -> dict[str, tuple[str, str]]:
        """See ``Store.note_fingerprints``."""
        return await self._run(lambda: queries.fingerprints(self._conn, tenant))

    async def get_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.get_notes``."""
        return await self._run(lambda: queries.get_notes(self._conn, tenant, list(note_ids)))

    async def notes_by_key(self, tenant: str, keys: Sequence[str]) -> dict[str, list[NoteMeta]]:
        """See ``Store.notes_by_key``."""
        return await self._run(lambda: queries.notes_by_key(self._conn, tenant, list(keys)))

    async def notes_for_records(self, tenant: str, refs: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.notes_for_records``."""
        return await self._run(lambda: queries.notes_for_records(self._conn, tenant, list(refs)))

    async def linked_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """See ``Store.linked_notes``."""
        return await self._run(lambda: queries.linked_notes(self._conn, tenant, list(note_ids)))

    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """See ``Store.get_chunks``."""
        return await self._run(lambda: queries.get_chunks(self._conn, tenant, list(chunk_ids)))

    async def chunk_notes(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.chunk_notes``: from the chunk catalogue."""
        return await self._run(lambda: self._catalog(tenant).notes_of(list(chunk_ids)))

    async def note_chunks(self, tenant: str, note_id: str) -> list[ChunkView]:
        """See ``Store.note_chunks``."""
        return await self._run(lambda: queries.note_chunks(self._conn, tenant, note_id))

    async def set_entity_mentions(
        self, tenant: str, entity_id: str, chunk_ids: Sequence[str]
    ) -> None:
        """See ``Store.set_entity_mentions``."""
        ids = list(chunk_ids)
        await self._run(
            lambda: self._write(lambda c: queries.set_mentions(c, tenant, entity_id, ids))
        )

    # -- records -------------------------------------------------------------------------------
    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        """See ``Store.upsert_records``."""
        vectors = [None if r.vector is None else self._vector(r.vector) for r in records]

        def work() -> int:
            ann = self._index(tenant, RECORDS)
            old, added = self._write(
                lambda c: record_queries.upsert_records(c, tenant, list(records), vectors)
            )
            with self._derived(tenant, RECORDS):
                ann.remove(old)
                if added:
                    keys = np.asarray([k for k, _ in added], dtype=np.uint64)
                    ann.add(keys, np.stack([v for _, v in added]))
            return len(records)

        return await self._run(work)

    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """See ``Store.delete_records``."""

        def work() -> int:
            ann = self._index(tenant, RECORDS)
            count, old = self._write(
                lambda c: record_queries.delete_records(c, tenant, collection, list(ids))
            )
            with self._derived(tenant, RECORDS):
                ann.remove(old)
            return count

        return await self._run(work)

    async def record_sources(self, tenant: str) -> dict[str, set[str]]:
        """See ``Store.record_sources``."""
        return await self._run(lambda: record_queries.record_sources(self._conn, tenant))

    async def get_records(self, tenant: str, refs: Sequence[str]) -> dict[str, Record]:
        """See ``Store.get_records``."""
        return await self._run(lambda: record_queries.get_records(self._conn, tenant, list(refs)))

    async def query_records(
        self,
        tenant: str,
        collection: str,
        conditions: Sequence[Condition],
        sort: Sort | None,
        limit: int,
    ) -> list[Record]:
        """See ``Store.query_records``: a collection scan evaluated by ``filters.matches``
        (personal-scale collections; no query text is ever built from field names)."""
        rows = await self._run(
            lambda: record_queries.collection_records(self._conn, tenant, collection)
        )
        return apply_query(rows, conditions, sort, limit)

    async def records_about(self, tenant: str, entity_id: str) -> list[Record]:
        """See ``Store.records_about``."""
        return await self._run(lambda: record_queries.records_about(self._conn, tenant, entity_id))

    # -- search --------------------------------------------------------------------------------
    def _vector_search(
        self,
        tenant: str,
        kind: str,
        vector: NDArray[np.float32],
        k: int,
        passing: Callable[[list[int]], set[int]] | None,
        candidates: Callable[[], list[int]],
        share: float | None = None,
    ) -> list[tuple[int, float]]:
        """Unfiltered: HNSW. Filtered: first HNSW with oversampling, keeping the neighbours that
        pass (cheap when the filter is broad, e.g. "no sensitive notes"); if fewer than k pass,
        an exact scan of the candidates (selective filters), or wider HNSW searches. ``share``
        is the fraction of the index expected to pass (None: not known), which sets the
        oversampling."""
        ann = self._index(tenant, kind)
        if passing is None:
            return ann.search(vector, k)
        if share == 0:
            return []
        # Asking HNSW for 4k neighbours under a filter that nearly all pass cost more than the
        # search itself at 200k chunks; a 20% margin over the expected share rarely falls short.
        want = k * 4 if share is None else min(k * 4, math.ceil(k * 1.2 / share) + 10)
        found = ann.search(vector, want)
        ok = passing([key for key, _ in found])
        kept = [(key, s) for key, s in found if key in ok]
        if len(kept) >= k or len(found) >= len(ann):
            return kept[:k]
        keys = candidates()
        if len(keys) <= EXACT_CANDIDATES:
            return ann.search_subset(vector, np.asarray(keys, dtype=np.uint64), k)
        allowed = set(keys)
        while True:  # widen the HNSW search until k pass the filter or the index is exhausted
            want *= 4
            kept = [(key, s) for key, s in ann.search(vector, want) if key in allowed]
            if len(kept) >= k or want >= len(ann):
                return kept[:k]

    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_vector``."""
        query = self._vector(vector)

        def work() -> list[Hit]:
            catalog = self._catalog(tenant)
            if is_trivial(flt):
                found = self._vector_search(tenant, CHUNKS, query, k, None, list)
            else:
                found = self._vector_search(
                    tenant,
                    CHUNKS,
                    query,
                    k,
                    functools.partial(catalog.passing, flt=flt),
                    functools.partial(catalog.candidates, flt),
                    # A list of notes (the graph channel's few) is scanned exactly anyway.
                    catalog.share(flt) if flt.note_ids is None else None,
                )
            ids = catalog.ids([key for key, _ in found])
            return _hits((ids[key], score) for key, score in found if key in ids)[:k]

        return await self._run(work)

    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_keyword``: BM25 from the tenant's keyword index (tantivy),
        then the filter (from the chunk catalogue)."""

        def work() -> list[Hit]:
            rank = functools.partial(self._keyword(tenant).search, query)
            return self._catalog(tenant).ranked(rank, k, flt)

        return await self._run(work)

    async def chunks_mentioning(
        self, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.chunks_mentioning``."""
        ids = list(entity_ids)
        return await self._run(lambda: queries.mentioning(self._conn, tenant, ids, k, flt))

    async def search_records_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_records_vector``."""
        query = self._vector(vector)

        def work() -> list[Hit]:
            if not flt.collections:
                return []
            found = self._vector_search(
                tenant,
                RECORDS,
                query,
                k,
                lambda keys: set(record_queries.record_candidates(self._conn, tenant, flt, keys)),
                lambda: record_queries.record_candidates(self._conn, tenant, flt),
            )
            refs = record_queries.record_refs_by_rowid(self._conn, [key for key, _ in found])
            return _hits((refs[key], score) for key, score in found if key in refs)[:k]

        return await self._run(work)

    async def search_records_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_records_keyword``."""
        if not flt.collections:
            return []
        return await self._run(
            lambda: record_queries.keyword_records(self._conn, tenant, query, k, flt)
        )

    # -- forgetting ----------------------------------------------------------------------------
    async def note_traces(
        self, tenant: str, note_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, int]:
        """See ``Store.note_traces``. Vectors are counted in the ANN index, not in SQLite (a
        chunk row and its vector blob go together): the note's chunk keys it still holds, plus
        any keys beyond the tenant's chunk count (vectors of chunks already deleted). Keyword
        rows are those of the FTS5 table (the search texts) or, where it holds more, of the
        keyword index (counted like the vectors)."""
        ids = list(chunk_ids)

        def work() -> dict[str, int]:
            counts, rowids = queries.note_traces(self._conn, tenant, note_id, ids)
            ann = self._index(tenant, CHUNKS)
            keys = np.asarray(rowids, dtype=np.uint64)
            held = int(np.count_nonzero(ann.index.contains(keys))) if len(keys) else 0
            stale = max(0, len(ann) - queries.chunk_count(self._conn, tenant))
            counts["vectors"] = held + stale
            words = self._keyword(tenant)
            extra = max(0, len(words) - queries.chunk_count(self._conn, tenant))
            indexed = words.count(rowids) + extra
            counts["keyword index rows"] = max(counts["keyword index rows"], indexed)
            return counts

        return await self._run(work)

    async def scrub(self, tenant: str) -> bool:
        """See ``Store.scrub``. Rows are zeroed on delete (``secure_delete``); FTS5 keeps a
        deleted chunk's terms in older index segments until they are merged, so the tenant's
        keyword tables are merged whole ("optimize"), and the keyword index, whose segments
        likewise keep deleted chunks' terms, is rebuilt from SQLite into fresh files; then the
        WAL, which still holds the pages as they were, is checkpointed and truncated. False when
        a reader kept the WAL from being reset."""

        def work() -> bool:
            self._write(lambda c: _optimize(c, tenant))
            generation = queries.generation(self._conn, tenant, CHUNKS)
            self._keyword(tenant).rebuild(queries.search_texts(self._conn, tenant), generation)
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            return not busy

        return await self._run(work)

    # -- metadata ------------------------------------------------------------------------------
    async def get_meta(self, tenant: str, key: str) -> str | None:
        """See ``Store.get_meta``."""
        return await self._run(lambda: queries.get_meta(self._conn, tenant, key))

    async def set_meta(self, tenant: str, key: str, value: str) -> None:
        """See ``Store.set_meta``."""
        await self._run(lambda: queries.set_meta(self._conn, tenant, key, value))

    async def stats(self, tenant: str) -> StoreStats:
        """See ``Store.stats``."""
        return await self._run(lambda: queries.stats(self._conn, tenant))

    async def warm(self, tenant: str) -> None:
        """See ``Store.warm``: the chunk HNSW index, the keyword index and the chunk catalogue
        (at 200k chunks about 1, 2.4 and 1-2 s), each loaded or rebuilt as on first use."""

        def work() -> None:
            self._index(tenant, CHUNKS)
            self._keyword(tenant)
            self._catalog(tenant)

        await self._run(work)

    async def delete_tenant(self, tenant: str) -> None:
        """See ``Store.delete_tenant``."""

        def work() -> None:
            self._write(lambda c: queries.delete_tenant(c, tenant))
            self._catalogs.pop(tenant, None)
            for kind in (CHUNKS, RECORDS):
                ann = self._ann.pop((tenant, kind), None)
                if ann is not None:
                    ann.invalidate()
            index = self._keywords.pop(tenant, None) or KeywordIndex(self._keyword_path(tenant))
            index.destroy()

        await self._run(work)

    def memory_bytes(self) -> int:
        """Approximate bytes held by the in-memory ANN indexes (for the benchmark)."""
        return sum(int(ann.index.memory_usage) for ann in self._ann.values())


def _optimize(conn: sqlite3.Connection, tenant: str) -> None:
    for kind in ("chunks", "records"):
        table = keyword.table(tenant, kind)
        if keyword.exists(conn, table):
            conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")


def _hits(pairs: Any) -> list[Hit]:
    hits = [Hit(id=i, score=float(s)) for i, s in pairs]
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits

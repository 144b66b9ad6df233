"""EmbeddedStore: the ``Store`` protocol on SQLite + usearch, in one process, no server.

Its SQL is in the ``*queries`` modules, the indexes derived from SQLite in ``derived`` (they follow
each committed write), and vector search under a filter in ``vector_search``."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

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
    Vector,
)
from memex.retrieval.store.counts import StoreStats
from memex.retrieval.store.embedded import (
    note_queries,
    queries,
    record_queries,
    search_queries,
    vector_search,
)
from memex.retrieval.store.embedded.derived import CHUNKS, RECORDS, DerivedIndexes
from memex.retrieval.store.embedded.schema import connect
from memex.retrieval.store.filters import apply_query
from memex.shared.errors import FailedPrecondition, InvalidArgument

T = TypeVar("T")


class EmbeddedStore:
    """SQLite + FTS5 + usearch + tantivy. All database work runs on one worker thread, in order."""

    def __init__(self, directory: Path, dimension: int, conn: sqlite3.Connection) -> None:
        self.dimension = dimension
        self._conn = conn
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memex-store")
        self._indexes = DerivedIndexes(directory, dimension, conn)
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
            self._indexes.close()
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
            ann, words = self._indexes.index(tenant, CHUNKS), self._indexes.keyword(tenant)
            catalog = self._indexes.catalog(tenant)
            old, new = self._write(lambda c: note_queries.replace_note(c, tenant, note, vectors))
            with self._indexes.updating(tenant, CHUNKS):
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
            ann, words = self._indexes.index(tenant, CHUNKS), self._indexes.keyword(tenant)
            catalog = self._indexes.catalog(tenant)
            count, old = self._write(lambda c: note_queries.delete_notes(c, tenant, list(note_ids)))
            with self._indexes.updating(tenant, CHUNKS):
                catalog.delete_notes(note_ids, old)
                ann.remove(old)
                words.replace(old, [], queries.generation(self._conn, tenant, CHUNKS))
            return count

        return await self._run(work)

    async def note_fingerprints(self, tenant: str) -> dict[str, tuple[str, str]]:
        """See ``Store.note_fingerprints``."""
        return await self._run(lambda: note_queries.fingerprints(self._conn, tenant))

    async def get_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.get_notes``."""
        return await self._run(lambda: note_queries.get_notes(self._conn, tenant, list(note_ids)))

    async def notes_by_key(self, tenant: str, keys: Sequence[str]) -> dict[str, list[NoteMeta]]:
        """See ``Store.notes_by_key``."""
        return await self._run(lambda: note_queries.notes_by_key(self._conn, tenant, list(keys)))

    async def notes_for_records(self, tenant: str, refs: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.notes_for_records``."""
        return await self._run(
            lambda: note_queries.notes_for_records(self._conn, tenant, list(refs))
        )

    async def linked_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """See ``Store.linked_notes``."""
        return await self._run(
            lambda: note_queries.linked_notes(self._conn, tenant, list(note_ids))
        )

    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """See ``Store.get_chunks``."""
        return await self._run(lambda: note_queries.get_chunks(self._conn, tenant, list(chunk_ids)))

    async def chunk_notes(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.chunk_notes``: from the chunk catalogue."""
        return await self._run(lambda: self._indexes.catalog(tenant).notes_of(list(chunk_ids)))

    async def note_chunks(self, tenant: str, note_id: str) -> list[ChunkView]:
        """See ``Store.note_chunks``."""
        return await self._run(lambda: note_queries.note_chunks(self._conn, tenant, note_id))

    async def set_entity_mentions(
        self, tenant: str, entity_id: str, chunk_ids: Sequence[str]
    ) -> None:
        """See ``Store.set_entity_mentions``."""
        ids = list(chunk_ids)
        await self._run(
            lambda: self._write(lambda c: note_queries.set_mentions(c, tenant, entity_id, ids))
        )

    # -- records -------------------------------------------------------------------------------
    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        """See ``Store.upsert_records``."""
        vectors = [None if r.vector is None else self._vector(r.vector) for r in records]

        def work() -> int:
            ann = self._indexes.index(tenant, RECORDS)
            old, added = self._write(
                lambda c: record_queries.upsert_records(c, tenant, list(records), vectors)
            )
            with self._indexes.updating(tenant, RECORDS):
                ann.remove(old)
                if added:
                    keys = np.asarray([k for k, _ in added], dtype=np.uint64)
                    ann.add(keys, np.stack([v for _, v in added]))
            return len(records)

        return await self._run(work)

    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """See ``Store.delete_records``."""

        def work() -> int:
            ann = self._indexes.index(tenant, RECORDS)
            count, old = self._write(
                lambda c: record_queries.delete_records(c, tenant, collection, list(ids))
            )
            with self._indexes.updating(tenant, RECORDS):
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
    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_vector``."""
        query = self._vector(vector)

        def work() -> list[Hit]:
            catalog = self._indexes.catalog(tenant)
            ann = self._indexes.index(tenant, CHUNKS)
            return vector_search.chunk_hits(catalog, ann, query, k, flt)

        return await self._run(work)

    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_keyword``: BM25 from the tenant's keyword index (tantivy),
        then the filter (from the chunk catalogue)."""

        def work() -> list[Hit]:
            rank = functools.partial(self._indexes.keyword(tenant).search, query)
            return self._indexes.catalog(tenant).ranked(rank, k, flt)

        return await self._run(work)

    async def chunks_mentioning(
        self, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.chunks_mentioning``."""
        ids = list(entity_ids)
        return await self._run(lambda: search_queries.mentioning(self._conn, tenant, ids, k, flt))

    async def search_records_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_records_vector``."""
        query = self._vector(vector)

        def work() -> list[Hit]:
            if not flt.collections:
                return []
            ann = self._indexes.index(tenant, RECORDS)
            return vector_search.record_hits(self._conn, ann, tenant, query, k, flt)

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
            counts, rowids = note_queries.note_traces(self._conn, tenant, note_id, ids)
            ann = self._indexes.index(tenant, CHUNKS)
            keys = np.asarray(rowids, dtype=np.uint64)
            held = int(np.count_nonzero(ann.index.contains(keys))) if len(keys) else 0
            stale = max(0, len(ann) - note_queries.chunk_count(self._conn, tenant))
            counts["vectors"] = held + stale
            words = self._indexes.keyword(tenant)
            extra = max(0, len(words) - note_queries.chunk_count(self._conn, tenant))
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
            self._write(lambda c: queries.optimize(c, tenant))
            generation = queries.generation(self._conn, tenant, CHUNKS)
            index = self._indexes.keyword(tenant)
            index.rebuild(search_queries.search_texts(self._conn, tenant), generation)
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
            self._indexes.index(tenant, CHUNKS)
            self._indexes.keyword(tenant)
            self._indexes.catalog(tenant)

        await self._run(work)

    async def delete_tenant(self, tenant: str) -> None:
        """See ``Store.delete_tenant``."""

        def work() -> None:
            self._write(lambda c: queries.delete_tenant(c, tenant))
            self._indexes.drop_tenant(tenant)

        await self._run(work)

    def memory_bytes(self) -> int:
        """Approximate bytes held by the in-memory ANN indexes (for the benchmark)."""
        return sum(int(ann.index.memory_usage) for ann in self._indexes.ann.values())

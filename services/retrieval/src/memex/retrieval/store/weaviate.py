"""The Weaviate backend of ``store.base.Store``, through the weaviate-client v4 async API.

The schema (collections, tenants, tokenization, HNSW) is in ``weaviate_schema``; value
translation in ``weaviate_codec``; connection, tenants and batched I/O in ``weaviate_base``; the
search channels, the lookups by name and link, and the counts in ``weaviate_search``,
``weaviate_links`` and ``weaviate_counts``. Weaviate has no transactions, so a note is written in
an order that keeps ``note_fingerprints`` honest (see ``upsert_note``), and deletes remove chunks
before the note that lists them, so an interrupted delete is repeated, never forgotten.

Weaviate answers at most ``QUERY_MAXIMUM_RESULTS`` (10,000 by default) hits per query, so a
search asking for more returns at most ``weaviate_search.MAX_K``; listings use the cursor API and
have no cap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from weaviate.classes.query import Filter

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store import weaviate_counts, weaviate_links, weaviate_search
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
from memex.retrieval.store.filters import apply_query
from memex.retrieval.store.weaviate_base import ID_BATCH, MAX_RESULTS, WeaviateCollections
from memex.retrieval.store.weaviate_calls import mapped_errors
from memex.retrieval.store.weaviate_replication import ReplicationPolicy, parse_nodes
from memex.retrieval.store.weaviate_schema import uuid_of
from memex.shared.errors import FailedPrecondition

if TYPE_CHECKING:
    from memex.retrieval.config import RetrievalSettings


class WeaviateStore(WeaviateCollections):
    """Memory kept in a Weaviate server, one Weaviate tenant per memex tenant."""

    # -- notes -------------------------------------------------------------------------------
    @mapped_errors
    async def upsert_note(self, tenant: str, note: Note) -> None:
        """Note with an empty fingerprint first (a crash from here on makes the indexer redo
        the note), then the chunks, then the old chunks not in this version go, and the real
        fingerprint is written last.

        Old chunks are deleted by their ids, never by a "not one of these" filter: Weaviate
        deletes the union of what a quorum of replicas match, and a replica still applying the
        insert above can list a new chunk under ``note_id`` before its ``chunk_id``, so a
        negative filter would delete a chunk that was just written (seen in the cluster test).
        """
        chunks = [codec.chunk_object(note, c, self.dimension) for c in note.chunks]
        name = await self._writable(tenant)
        notes, chunk_col = self._col("note", name), self._col("chunk", name)
        await self._insert(notes, [codec.note_object(note, "")])
        await self._insert(chunk_col, chunks)
        held = await self._fetch_ids(chunk_col, "note_id", [note.id], ["chunk_id"])
        stale = {str(row["chunk_id"]) for row in held} - {c.id for c in note.chunks}
        ids = [uuid_of("chunk", chunk_id) for chunk_id in sorted(stale)]
        for start in range(0, len(ids), ID_BATCH):
            await self._delete(
                chunk_col, Filter.by_id().contains_any(ids[start : start + ID_BATCH])
            )
        await self._insert(notes, [codec.note_object(note, note.fingerprint)])

    @mapped_errors
    async def delete_notes(self, tenant: str, note_ids: Sequence[str]) -> int:
        """Chunks first, then the notes (whose links go with them)."""
        name = await self._readable(tenant)
        if name is None or not note_ids:
            return 0
        notes = self._col("note", name)
        existing = await self._fetch_ids(notes, "note_id", note_ids, ["note_id"])
        for start in range(0, len(note_ids), ID_BATCH):
            part = list(note_ids[start : start + ID_BATCH])
            await self._delete(self._col("chunk", name), codec.any_of("note_id", part))
            await self._delete(notes, codec.any_of("note_id", part))
        return len(existing)

    @mapped_errors
    async def note_fingerprints(self, tenant: str) -> dict[str, tuple[str, str]]:
        """``{path: (note_id, fingerprint)}`` of every note, by a cursor over the tenant."""
        name = await self._readable(tenant)
        if name is None:
            return {}
        props = ["path", "note_id", "fingerprint"]
        return {
            str(p["path"]): (str(p["note_id"]), str(p.get("fingerprint") or ""))
            async for p in self._scan(self._col("note", name), props)
        }

    @mapped_errors
    async def get_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """Metadata of the notes that exist."""
        name = await self._readable(tenant)
        if name is None:
            return {}
        rows = await self._fetch_ids(self._col("note", name), "note_id", note_ids, codec.NOTE_PROPS)
        return {m.id: m for m in map(codec.note_meta, rows)}

    @mapped_errors
    async def notes_by_key(self, tenant: str, keys: Sequence[str]) -> dict[str, list[NoteMeta]]:
        """Notes by link key, each list ordered by path."""
        return await weaviate_links.notes_by_key(self, tenant, keys)

    @mapped_errors
    async def notes_for_records(self, tenant: str, refs: Sequence[str]) -> dict[str, NoteMeta]:
        """For each record ref, the note (smallest path) standing for it."""
        return await weaviate_links.notes_for_records(self, tenant, refs)

    @mapped_errors
    async def linked_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """Outgoing links resolved through ``keys``, plus notes whose links name our keys."""
        return await weaviate_links.linked_notes(self, tenant, note_ids)

    @mapped_errors
    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """Chunks joined with their notes' metadata."""
        name = await self._readable(tenant)
        if name is None or not chunk_ids:
            return {}
        props = [*codec.CHUNK_PROPS, "mentions"]
        rows = await self._fetch_ids(self._col("chunk", name), "chunk_id", chunk_ids, props)
        notes = await self.get_notes(tenant, sorted({str(r["note_id"]) for r in rows}))
        return {
            str(r["chunk_id"]): codec.chunk_view(r, notes[str(r["note_id"])])
            for r in rows
            if str(r["note_id"]) in notes
        }

    @mapped_errors
    async def chunk_notes(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """Each chunk's note metadata, without reading the chunks' texts."""
        name = await self._readable(tenant)
        if name is None or not chunk_ids:
            return {}
        rows = await self._fetch_ids(
            self._col("chunk", name), "chunk_id", chunk_ids, ["chunk_id", "note_id"]
        )
        notes = await self.get_notes(tenant, sorted({str(r["note_id"]) for r in rows}))
        return {
            str(r["chunk_id"]): notes[str(r["note_id"])] for r in rows if str(r["note_id"]) in notes
        }

    @mapped_errors
    async def note_chunks(self, tenant: str, note_id: str) -> list[ChunkView]:
        """One note's chunks in ordinal order."""
        name = await self._readable(tenant)
        if name is None:
            return []
        notes = await self.get_notes(tenant, [note_id])
        if note_id not in notes:
            return []
        props = [*codec.CHUNK_PROPS, "mentions"]
        rows = await self._fetch_ids(self._col("chunk", name), "note_id", [note_id], props)
        views = [codec.chunk_view(r, notes[note_id]) for r in rows]
        return sorted(views, key=lambda v: (v.ordinal, v.id))

    @mapped_errors
    async def set_entity_mentions(
        self, tenant: str, entity_id: str, chunk_ids: Sequence[str]
    ) -> None:
        """Adds the entity to the given chunks and removes it from every other chunk."""
        name = await self._writable(tenant)
        col = self._col("chunk", name)
        props = ["chunk_id", "mentions"]
        current = await self._fetch(col, codec.any_of("mentions", [entity_id]), props)
        wanted = await self._fetch_ids(col, "chunk_id", chunk_ids, props) if chunk_ids else []
        keep = {str(r["chunk_id"]) for r in wanted}
        for row in [*current, *wanted]:
            mentions = set(row.get("mentions") or ())
            new = mentions | {entity_id} if row["chunk_id"] in keep else mentions - {entity_id}
            if new != mentions:
                await self._writing(col).data.update(
                    uuid=uuid_of("chunk", str(row["chunk_id"])),
                    properties={"mentions": sorted(new), "mention_count": len(new)},
                )

    # -- records -----------------------------------------------------------------------------
    @mapped_errors
    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        """Creates or replaces records by ``collection:id``."""
        objects = [codec.record_object(r, self.dimension) for r in records]
        if not objects:
            return 0
        await self._insert(self._col("record", await self._writable(tenant)), objects)
        return len(objects)

    @mapped_errors
    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """Deletes records by id; returns how many existed."""
        name = await self._readable(tenant)
        if name is None or not ids:
            return 0
        refs = [f"{collection}:{i}" for i in ids]
        deleted = 0
        for start in range(0, len(refs), ID_BATCH):
            part = refs[start : start + ID_BATCH]
            deleted += await self._delete(self._col("record", name), codec.any_of("ref", part))
        return deleted

    @mapped_errors
    async def record_sources(self, tenant: str) -> dict[str, set[str]]:
        """``{source: {ref, ...}}`` by a cursor over the tenant's records."""
        name = await self._readable(tenant)
        out: dict[str, set[str]] = {}
        if name is not None:
            async for row in self._scan(self._col("record", name), ["source", "ref"]):
                out.setdefault(str(row["source"]), set()).add(str(row["ref"]))
        return out

    @mapped_errors
    async def get_records(self, tenant: str, refs: Sequence[str]) -> dict[str, Record]:
        """Records by ``collection:id``."""
        name = await self._readable(tenant)
        if name is None or not refs:
            return {}
        rows = await self._fetch_ids(self._col("record", name), "ref", refs, codec.RECORD_PROPS)
        return {r.ref: r for r in map(codec.record_from, rows)}

    @mapped_errors
    async def query_records(
        self,
        tenant: str,
        collection: str,
        conditions: Sequence[Condition],
        sort: Sort | None,
        limit: int,
    ) -> list[Record]:
        """The collection's records, filtered and sorted by ``filters.apply_query``: the filter
        language reaches into JSON fields, which Weaviate cannot index, so it runs here on the
        records of one collection (fetched by a bound filter, never a built query string)."""
        name = await self._readable(tenant)
        if name is None:
            return []
        col = self._col("record", name)
        where = Filter.by_property("collection").equal(collection)
        rows = await self._fetch(col, where, codec.RECORD_PROPS)
        if len(rows) >= MAX_RESULTS:  # more than one filtered query may return: use the cursor
            rows = [
                r
                async for r in self._scan(col, codec.RECORD_PROPS)
                if r.get("collection") == collection
            ]
        return apply_query([codec.record_from(r) for r in rows], conditions, sort, limit)

    @mapped_errors
    async def records_about(self, tenant: str, entity_id: str) -> list[Record]:
        """Records referring to the entity, by collection then id."""
        name = await self._readable(tenant)
        if name is None:
            return []
        where = codec.any_of("entity_refs", [entity_id])
        rows = await self._fetch(self._col("record", name), where, codec.RECORD_PROPS)
        return sorted(map(codec.record_from, rows), key=lambda r: (r.collection, r.id))

    # -- search channels ---------------------------------------------------------------------
    @mapped_errors
    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """HNSW nearest chunks (cosine), pre-filtered."""
        return await weaviate_search.vector_hits(self, "chunk", tenant, vector, k, flt, "chunk_id")

    @mapped_errors
    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """BM25 over the chunks' search text, pre-filtered."""
        return await weaviate_search.keyword_hits(
            self, "chunk", tenant, query, k, flt, "chunk_id", "search_text"
        )

    @mapped_errors
    async def search_records_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """HNSW nearest records of ``flt.collections``."""
        return await weaviate_search.vector_hits(self, "record", tenant, vector, k, flt, "ref")

    @mapped_errors
    async def search_records_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """BM25 over records' text in ``flt.collections``."""
        return await weaviate_search.keyword_hits(
            self, "record", tenant, query, k, flt, "ref", "text"
        )

    @mapped_errors
    async def chunks_mentioning(
        self, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """Chunks mentioning the entities: more entities first, then newer, then by id."""
        return await weaviate_search.mentioning_hits(self, tenant, entity_ids, k, flt)

    # -- metadata ----------------------------------------------------------------------------
    @mapped_errors
    async def get_meta(self, tenant: str, key: str) -> str | None:
        """A per-tenant value, or None."""
        name = await self._readable(tenant)
        if name is None:
            return None
        obj = await self._col("meta", name).query.fetch_object_by_id(uuid_of("meta", key))
        return None if obj is None else str(obj.properties.get("value"))

    @mapped_errors
    async def set_meta(self, tenant: str, key: str, value: str) -> None:
        """Sets a per-tenant value."""
        col = self._col("meta", await self._writable(tenant))
        await self._insert(col, [codec.meta_object(key, value)])

    # -- forgetting --------------------------------------------------------------------------
    @mapped_errors
    async def note_traces(
        self, tenant: str, note_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, int]:
        """See ``Store.note_traces``, from the objects themselves: a chunk object carries its
        vector and is what the BM25 index indexes, so vectors and keyword rows are counted as
        the note's chunk objects; links, name keys and record links are lists on the note
        object, mentions lists on the chunk objects."""
        return await weaviate_counts.note_traces(self, tenant, note_id, chunk_ids)

    async def scrub(self, tenant: str) -> bool:
        """See ``Store.scrub``: Weaviate removes deleted objects from its LSM segments and HNSW
        graph in background compaction and tombstone cleanup, which a client can neither force
        nor observe; so False, and the receipt says so."""
        return False

    async def warm(self, tenant: str) -> None:
        """See ``Store.warm``: Weaviate's indexes live in the server; nothing to load here."""

    @mapped_errors
    async def stats(self, tenant: str) -> StoreStats:
        """Counts by aggregation (links and mentions are summed per note and per chunk)."""
        return await weaviate_counts.stats(self, tenant)


async def open_weaviate_store(settings: RetrievalSettings, dimension: int) -> WeaviateStore:
    """Connects to the Weaviate the settings name (``MEMEX_RETRIEVAL_WEAVIATE_*``)."""
    if settings.weaviate_api_key is None:
        raise FailedPrecondition(
            "MEMEX_RETRIEVAL_WEAVIATE_API_KEY is not set; the Weaviate backend needs the key "
            "the server was started with"
        )
    failover = parse_nodes(settings.weaviate_nodes)
    policy = ReplicationPolicy(
        factor=settings.weaviate_replication_factor,
        read=settings.weaviate_read_consistency,
        # One node has nowhere to fail over to: its errors are reported at once.
        retry_seconds=settings.weaviate_retry_seconds if failover else 0.0,
    )
    return await WeaviateStore.connect(
        http_host=settings.weaviate_host,
        http_port=settings.weaviate_http_port,
        grpc_port=settings.weaviate_grpc_port,
        api_key=settings.weaviate_api_key.get_secret_value(),
        dimension=dimension,
        prefix=settings.weaviate_collection_prefix,
        timeout=settings.weaviate_timeout_seconds,
        failover=failover,
        policy=policy,
    )

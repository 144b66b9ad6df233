"""The memory as it stood at the end of a day: a read-only view the searcher runs over.

``MemoryAsOf`` answers the store reads that hybrid search makes (``search.SearchSource``) from
two tenants at once: the live tenant, limited to the notes and records whose live version already
held then, and the history tenant, limited to the archived versions that held then. Each search
channel runs on both and keeps the best hits of the two, so fusion, recency (measured from that
day), rerank and citations work as they do now. An archived version is cited by its own episode
id (``NOTE_ID@vN``) under its note's title, and ``GetNote`` reads it.

What it does not rebuild: wikilinks resolve among live notes only (a neighbour that existed then
but is gone now is not found through a link), and a live note's links are today's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from memex.retrieval.embedder import MODEL_META
from memex.retrieval.history.versions import (
    NOTE_LEDGER,
    RECORD_LEDGER,
    Ledger,
    cutoff,
    history_tenant,
    split_version,
    version_note_of_chunk,
)
from memex.retrieval.store.base import (
    ChunkView,
    Condition,
    Hit,
    MemoryReader,
    NoteMeta,
    Record,
    SearchFilter,
    Sort,
    Vector,
)
from memex.retrieval.store.filters import apply_query

T = TypeVar("T")


class MemoryAsOf:
    """A tenant's memory as it stood at the end of one day (see the module doc)."""

    def __init__(
        self,
        store: MemoryReader,
        tenant: str,
        live_notes: frozenset[str] | None,
        old_notes: frozenset[str],
        hidden_records: frozenset[str],
        old_records: frozenset[str],
        history_vectors: bool,
    ) -> None:
        self._store = store
        self._tenant = tenant
        self._history = history_tenant(tenant)
        self._live_notes = live_notes
        self._old_notes = old_notes
        self._hidden_records = hidden_records
        self._old_records = old_records
        self._history_vectors = history_vectors

    @staticmethod
    async def open(store: MemoryReader, tenant: str, day: dt.date) -> MemoryAsOf:
        """The view of ``tenant`` at the end of ``day``, from the ledger."""
        end = cutoff(day)
        notes = await Ledger.load(store, tenant, NOTE_LEDGER)
        live = {note_id for _, (note_id, _) in (await store.note_fingerprints(tenant)).items()}
        # A live note the ledger has no entry for was indexed before versions were kept: it is
        # taken to have held (the next index run records when its file was written).
        later = {v.of for v in notes.all() if v.current and not v.holds_at(end)}
        old_notes = frozenset(v.id for v in notes.all() if not v.current and v.holds_at(end))
        records = await Ledger.load(store, tenant, RECORD_LEDGER)
        hidden = frozenset(v.of for v in records.all() if v.current and not v.holds_at(end))
        old_records = frozenset(v.id for v in records.all() if not v.current and v.holds_at(end))
        model = await store.get_meta(tenant, MODEL_META)
        history_model = await store.get_meta(history_tenant(tenant), MODEL_META)
        return MemoryAsOf(
            store,
            tenant,
            None if not later else frozenset(live - later),
            old_notes,
            hidden,
            old_records,
            # Vectors of another model are not compared with this query's (a model change
            # re-embeds the history in its index run; until then only words find it).
            history_vectors=not (model and history_model and model != history_model),
        )

    # -- notes ---------------------------------------------------------------------------------
    def _split_filter(self, flt: SearchFilter) -> tuple[SearchFilter | None, SearchFilter | None]:
        """The filter for the live tenant and for the history tenant (None: nothing there)."""
        wanted = flt.note_ids
        live: frozenset[str] | None = self._live_notes
        if wanted is not None:
            own = frozenset(i for i in wanted if split_version(i) is None)
            live = own if live is None else own & live
        old = self._old_notes if wanted is None else self._old_notes & wanted
        return (
            None if live is not None and not live else dataclasses.replace(flt, note_ids=live),
            dataclasses.replace(flt, note_ids=old) if old else None,
        )

    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_vector``."""
        live, old = self._split_filter(flt)
        hits = await self._store.search_chunks_vector(self._tenant, vector, k, live) if live else []
        if old and self._history_vectors:
            hits += await self._store.search_chunks_vector(self._history, vector, k, old)
        return _best(hits, k)

    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_chunks_keyword``."""
        live, old = self._split_filter(flt)
        hits = await self._store.search_chunks_keyword(self._tenant, query, k, live) if live else []
        if old:
            hits += await self._store.search_chunks_keyword(self._history, query, k, old)
        return _best(hits, k)

    async def chunks_mentioning(
        self, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.chunks_mentioning``."""
        live, old = self._split_filter(flt)
        store = self._store
        hits = await store.chunks_mentioning(self._tenant, entity_ids, k, live) if live else []
        if old:
            hits += await store.chunks_mentioning(self._history, entity_ids, k, old)
        return _best(hits, k)

    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """See ``Store.get_chunks``; an archived chunk comes with its version's metadata."""
        return await self._read_both(self._store.get_chunks, *self._split_chunks(chunk_ids))

    async def chunk_notes(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.chunk_notes``."""
        return await self._read_both(self._store.chunk_notes, *self._split_chunks(chunk_ids))

    async def _read_both(
        self,
        read: Callable[[str, list[str]], Awaitable[dict[str, T]]],
        live: list[str],
        old: list[str],
    ) -> dict[str, T]:
        """``read`` of the ``live`` ids from the live tenant and of the ``old`` (archived) ones
        from the history tenant, as one dict; a tenant with no ids is not asked."""
        found = await read(self._tenant, live) if live else {}
        if old:
            found |= await read(self._history, old)
        return found

    def _split_chunks(self, chunk_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        live, old = [], []
        for chunk_id in chunk_ids:
            note = version_note_of_chunk(chunk_id)
            if note is None:
                if self._holds(chunk_id.rsplit("-", 1)[0]):
                    live.append(chunk_id)
            elif note in self._old_notes:
                old.append(chunk_id)
        return live, old

    def _holds(self, note_id: str) -> bool:
        return self._live_notes is None or note_id in self._live_notes

    async def note_fingerprints(self, tenant: str) -> dict[str, tuple[str, str]]:
        """See ``Store.note_fingerprints``: the notes that held, one version per path."""
        found = {
            path: entry
            for path, entry in (await self._store.note_fingerprints(self._tenant)).items()
            if self._holds(entry[0])
        }
        for meta in (await self._store.get_notes(self._history, sorted(self._old_notes))).values():
            found[meta.path] = (meta.id, meta.fingerprint)
        return found

    async def get_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.get_notes``."""
        live = [i for i in note_ids if split_version(i) is None and self._holds(i)]
        old = [i for i in note_ids if i in self._old_notes]
        return await self._read_both(self._store.get_notes, live, old)

    async def linked_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """See ``Store.linked_notes``: today's links, between the versions that held."""
        own = {i: (split_version(i) or (i, 0))[0] for i in note_ids}
        links = await self._store.linked_notes(self._tenant, sorted(set(own.values())))
        held: dict[str, str] = {}  # a note id -> its version that held, when archived
        for version in self._old_notes:
            split = split_version(version)
            if split is not None:
                held[split[0]] = version
        out: dict[str, set[str]] = {}
        for given, note_id in own.items():
            if note_id not in links:
                continue
            out[given] = {held.get(n, n) for n in links[note_id] if n in held or self._holds(n)} - {
                given
            }
        return out

    async def notes_for_records(self, tenant: str, refs: Sequence[str]) -> dict[str, NoteMeta]:
        """See ``Store.notes_for_records``: live notes that held."""
        own = {ref: (split_version(ref) or (ref, 0))[0] for ref in refs}
        found = await self._store.notes_for_records(self._tenant, sorted(set(own.values())))
        return {ref: found[o] for ref, o in own.items() if o in found and self._holds(found[o].id)}

    # -- records -------------------------------------------------------------------------------
    async def get_records(self, tenant: str, refs: Sequence[str]) -> dict[str, Record]:
        """See ``Store.get_records``: live records that held, and archived versions that held.
        A record's own ref whose live version did not hold yet reads the version that held then,
        under its own id (a timeline as of a day asks for ``entities:graham``, not its @v1)."""
        then = self._held_versions
        live = [r for r in refs if r not in self._old_records and r not in self._hidden_records]
        old = {r: r for r in refs if r in self._old_records}
        old |= {then[r]: r for r in refs if r in self._hidden_records and r in then}
        found = await self._store.get_records(self._tenant, live) if live else {}
        if old:
            archived = await self._store.get_records(self._history, list(old))
            for version, record in archived.items():
                asked = old[version]
                found[asked] = record if asked == version else _unversioned(record)
        return found

    @functools.cached_property
    def _held_versions(self) -> dict[str, str]:
        """The archived version that held then, by its record's own ref."""
        held = {}
        for version in self._old_records:
            if (split := split_version(version)) is not None:  # "entities:graham@v1"
                held[split[0]] = version
        return held

    async def search_records_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_records_vector``."""
        return await self._record_hits(
            lambda where, n: self._store.search_records_vector(where, vector, n, flt),
            k,
            history=self._history_vectors,
        )

    async def search_records_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """See ``Store.search_records_keyword``."""
        return await self._record_hits(
            lambda where, n: self._store.search_records_keyword(where, query, n, flt), k
        )

    async def _record_hits(
        self, search: Callable[[str, int], Awaitable[list[Hit]]], k: int, *, history: bool = True
    ) -> list[Hit]:
        """The best ``k`` hits of ``search`` (given a tenant and how many to find) among the live
        records that held and, unless ``history`` is off, the archived versions that held."""
        hits = await search(self._tenant, k + self._extra)
        hits = [h for h in hits if h.id not in self._hidden_records]
        if self._old_records and history:
            old = await search(self._history, k + self._extra)
            hits += [h for h in old if h.id in self._old_records]
        return _best(hits, k)

    @property
    def _extra(self) -> int:
        """How many more record hits to ask for than are kept: the store cannot filter by the
        ledger, so the records that did not hold yet are dropped after the search."""
        return len(self._hidden_records) + len(self._old_records)

    async def query_records(
        self,
        tenant: str,
        collection: str,
        conditions: Sequence[Condition],
        sort: Sort | None,
        limit: int,
    ) -> list[Record]:
        """See ``Store.query_records``: live records that held, and archived versions that held
        under their own ids, filtered, sorted and capped as one list."""
        more = limit + self._extra
        found = await self._held_records(
            lambda where: self._store.query_records(where, collection, conditions, sort, more)
        )
        return apply_query(found, (), sort, limit)

    async def records_about(self, tenant: str, entity_id: str) -> list[Record]:
        """See ``Store.records_about``: live records that held, and archived versions that held
        under their own ids."""
        return await self._held_records(lambda where: self._store.records_about(where, entity_id))

    async def _held_records(self, read: Callable[[str], Awaitable[list[Record]]]) -> list[Record]:
        """``read`` of the live tenant's records that held, and of the history tenant's archived
        versions that held, under their own ids."""
        found = [r for r in await read(self._tenant) if r.ref not in self._hidden_records]
        if self._old_records:
            old = await read(self._history)
            found += [_unversioned(r) for r in old if r.ref in self._old_records]
        return found

    async def get_meta(self, tenant: str, key: str) -> str | None:
        """See ``Store.get_meta``: the live tenant's."""
        return await self._store.get_meta(self._tenant, key)


def _unversioned(record: Record) -> Record:
    """An archived record version under its record's own id."""
    return dataclasses.replace(record, id=(split_version(record.id) or (record.id, 0))[0])


def _best(hits: list[Hit], k: int) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, h.id))[:k]

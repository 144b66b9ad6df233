"""The backend-neutral store interface of the retrieval service (no gRPC, no backend imports).

A store keeps one tenant's memory apart from every other tenant's: notes with their chunks and
chunk vectors, structured records (optionally with vectors), the wikilink graph between notes,
entity mentions in chunks, and small per-tenant metadata (fingerprints for incremental
indexing). It answers the *raw* search channels only. Everything that both backends share lives
outside the store, in the service: chunking and ingestion, Reciprocal Rank Fusion, salience and
recency adjustment, citation resolution, the graph channel's expansion logic, query parsing.

Conventions every implementation follows (the contract suite in ``tests/contract`` checks them):

* **Tenancy.** Every method takes ``tenant`` first. A tenant is created implicitly by its first
  write; reading an unknown tenant returns empty results, never an error. Nothing written for
  one tenant is ever visible to another (ids may repeat across tenants). ``delete_tenant``
  removes everything of one tenant.
* **Ids.** Note ids, chunk ids and record ``(collection, id)`` pairs are chosen by the caller and
  are deterministic (the indexer derives them from the vault path and chunk ordinal), so a
  repeated write replaces rather than duplicates.
* **Vectors** are L2-normalised ``float32`` sequences (a list or a 1-D numpy array) of the
  dimension given when the store was opened; a wrong dimension raises
  ``memex.shared.errors.InvalidArgument``. Vector scores are cosine similarity (``1 - cosine
  distance``), higher is better. Approximate (ANN) search is allowed; recall@10 against exact
  search must stay >= 0.95.
* **Keyword** search ranks by BM25 over ``Chunk.search_text`` / ``Record.text``. The query is
  plain user text: the backend splits it into words (Unicode letters and digits; everything else
  is a separator, so user text can never inject query syntax), lower-cases them, and matches
  documents containing *any* word (OR). Scores are positive, higher is better.
* **Results** of every search are ``list[Hit]`` in descending score order, ties broken by
  ascending id, at most ``k`` long. Hits carry ids only; callers load what they show with
  ``get_chunks`` / ``get_records``.
* **Filters** (``SearchFilter``) are applied *inside* the search (pre-filtering), so a filtered
  search still returns up to ``k`` hits when that many match.
* **Durable on return.** When a mutating coroutine returns, the change is visible to every later
  read (read-your-writes) and survives a crash or ``kill -9`` of the process right after. A
  mutation that is interrupted before it returns is either fully applied or not applied, *as
  observed through ``note_fingerprints``*: a note's new fingerprint may only become visible once
  all its chunks, vectors, links and mentions are stored, and repeating the same ``upsert_note``
  repairs any partial state (stale chunks of that note are removed; nothing is duplicated). The
  embedded backend gets this from one SQLite transaction per call; a backend without
  transactions writes the note's fingerprint last.
* **Dates** are ``YYYY-MM-DD`` strings; they compare correctly as strings.

Link keys, aliases and ``Link`` are in ``links``; ``StoreStats`` and ``TRACE_KINDS`` in ``counts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from memex.retrieval.store.counts import StoreStats
from memex.retrieval.store.links import Link, shown_aliases

Vector = Sequence[float] | np.ndarray[Any, Any]
"""An L2-normalised embedding (a list of floats or a 1-D float32 numpy array)."""

JsonValue = Any
"""A JSON-compatible value (what ``json.dumps`` accepts)."""

DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Chunk:
    """One heading-aware piece of a note (at most 1,600 characters of ``text``)."""

    id: str
    note_id: str
    ordinal: int
    text: str
    heading: str
    """Heading path inside the note, e.g. ``"Plans > Q3"``; empty before the first heading."""
    start: int
    end: int
    """Character offsets of ``text`` in the note body (``body[start:end] == text``)."""
    search_text: str
    """What was embedded and keyword-indexed: title, heading path and text."""
    vector: Vector
    mentions: tuple[str, ...] = ()
    """Ids of entity records mentioned in this chunk."""


@dataclass(frozen=True)
class Note:
    """A vault note (an episode) and everything derived from it, written as one unit."""

    id: str
    path: str
    """Relative to the vault root, with ``/`` separators."""
    title: str
    date: str
    """Frontmatter ``date``, else the file's modification date (YYYY-MM-DD)."""
    fingerprint: str
    """Content hash the indexer uses to skip unchanged notes."""
    tags: tuple[str, ...] = ()
    """Lower-case, without ``#``; nested tags keep their ``/``."""
    keys: tuple[str, ...] = ()
    """``link_key`` forms of the title, the file stem and every alias."""
    record_keys: tuple[str, ...] = ()
    """``collection:id`` of the records this note stands for (from frontmatter), so a record's
    citation can become ``[[Title]]``."""
    frontmatter: Mapping[str, JsonValue] = field(default_factory=dict)
    sensitive: bool = False
    salience: float = 0.5
    """0..1; frontmatter ``salience``/``importance``, else 0.5."""
    links: tuple[Link, ...] = ()
    chunks: tuple[Chunk, ...] = ()

    def meta(self) -> NoteMeta:
        """The note's metadata, as a store reads it back."""
        return NoteMeta(
            id=self.id,
            path=self.path,
            title=self.title,
            date=self.date,
            fingerprint=self.fingerprint,
            tags=tuple(self.tags),
            sensitive=bool(self.sensitive),
            salience=float(self.salience),
            record_keys=tuple(self.record_keys),
            aliases=shown_aliases(self.title, self.frontmatter),
        )


@dataclass(frozen=True)
class NoteMeta:
    """A note without its chunks and links: what search results and fingerprints need."""

    id: str
    path: str
    title: str
    date: str
    fingerprint: str
    tags: tuple[str, ...] = ()
    sensitive: bool = False
    salience: float = 0.5
    record_keys: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    """Frontmatter ``aliases`` the title does not already say (``other_names``): "Who is Chi?"
    needs the briefing to say that Chioma Okafor is Chi."""


@dataclass(frozen=True)
class ChunkView:
    """A stored chunk joined with its note's metadata (no vector)."""

    id: str
    note: NoteMeta
    ordinal: int
    text: str
    heading: str
    start: int
    end: int
    mentions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Record:
    """A structured record: an entity, event, inbox item, belief or observation."""

    collection: str
    id: str
    fields: Mapping[str, JsonValue]
    """The record as the app or the JSON Lines file gave it."""
    text: str = ""
    """Searchable text (embedded and keyword-indexed); derived from the fields by the service."""
    date: str | None = None
    """YYYY-MM-DD for time windows, recency and timelines; None when the record has none."""
    tags: tuple[str, ...] = ()
    sensitive: bool = False
    entity_refs: tuple[str, ...] = ()
    """Ids of entity records this record is about (for PersonTimeline)."""
    source: str = "api"
    """Where it came from: ``"api"`` (UpsertRecords) or the vault-relative JSON Lines file, so a
    re-index can remove exactly the records a file no longer holds."""
    vector: Vector | None = None

    @property
    def ref(self) -> str:
        """``collection:id``, the record's citation when no note stands for it."""
        return f"{self.collection}:{self.id}"


@dataclass(frozen=True)
class SearchFilter:
    """Pre-filters for a search; every set field must hold."""

    date_from: str | None = None
    date_to: str | None = None
    """Inclusive bounds on the note date (chunks) or record date (records). An item without a
    date fails any bound that is set."""
    tags: tuple[str, ...] = ()
    """The item (its note, for chunks) carries all of these tags."""
    include_sensitive: bool = True
    note_ids: frozenset[str] | None = None
    """Chunks only: restrict to chunks of these notes (the graph channel's neighbourhood)."""
    collections: tuple[str, ...] = ()
    """Records only: the collections to search; empty means none (not all)."""


@dataclass(frozen=True)
class Hit:
    """One search result: an id and the channel's raw score. For records ``id`` is
    ``collection:id``."""

    id: str
    score: float


ConditionOp = Literal["eq", "ne", "lt", "lte", "gt", "gte", "contains", "in"]


@dataclass(frozen=True)
class Condition:
    """One ``field op value`` test of the record filter language (see ``store.filters``)."""

    field: str
    op: ConditionOp
    value: JsonValue


@dataclass(frozen=True)
class Sort:
    """Order of a record query: by one field; missing values sort last either way."""

    field: str
    descending: bool = False


@runtime_checkable
class MemoryReader(Protocol):
    """The reads hybrid search and the record reads make: what a ``Store`` answers, and what the
    memory as of a date (``history.as_of.MemoryAsOf``) answers too."""

    async def note_fingerprints(self, tenant: str) -> dict[str, tuple[str, str]]:
        """``{path: (note_id, fingerprint)}`` for every stored note of the tenant."""

    async def get_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """Metadata of the notes that exist, by id; unknown ids are absent."""

    async def notes_for_records(self, tenant: str, refs: Sequence[str]) -> dict[str, NoteMeta]:
        """For each ``collection:id`` given, a note whose ``record_keys`` contains it (the one with
        the smallest path when several do); absent if none."""

    async def linked_notes(self, tenant: str, note_ids: Sequence[str]) -> dict[str, set[str]]:
        """The wikilink neighbourhood, both directions: for each given note that exists, the ids of
        the notes it links to (targets resolved through ``Note.keys``) and of the notes linking to
        it. A note is not its own neighbour."""

    async def get_chunks(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, ChunkView]:
        """The chunks that exist, by id, with their note's metadata."""

    async def chunk_notes(self, tenant: str, chunk_ids: Sequence[str]) -> dict[str, NoteMeta]:
        """For each of the chunks that exist, its note's metadata: what ranking search results
        needs, without the texts that ``get_chunks`` reads."""

    async def get_records(self, tenant: str, refs: Sequence[str]) -> dict[str, Record]:
        """Records by ``collection:id``, without vectors; unknown refs are absent."""

    async def query_records(
        self,
        tenant: str,
        collection: str,
        conditions: Sequence[Condition],
        sort: Sort | None,
        limit: int,
    ) -> list[Record]:
        """Records of one collection for which every condition holds (semantics in
        ``store.filters.matches``; a backend may push conditions down or evaluate them with that
        function), ordered by ``sort`` (else by id), at most ``limit``. Field names are validated by
        the caller; a backend must still never build query strings from them."""

    async def records_about(self, tenant: str, entity_id: str) -> list[Record]:
        """Every record whose ``entity_refs`` contains ``entity_id`` (any collection)."""

    async def search_chunks_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """The ``k`` chunks nearest to ``vector`` (cosine similarity) among those passing
        ``flt``."""

    async def search_chunks_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """The ``k`` best BM25 matches of ``query`` over ``Chunk.search_text``; empty when the query
        has no words."""

    async def chunks_mentioning(
        self, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
    ) -> list[Hit]:
        """Chunks mentioning any of the entities; score = how many of them the chunk mentions,
        ties by newer note date, then id."""

    async def search_records_vector(
        self, tenant: str, vector: Vector, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """Nearest records with a vector in ``flt.collections``; hit ids are ``collection:id``."""

    async def search_records_keyword(
        self, tenant: str, query: str, k: int, flt: SearchFilter
    ) -> list[Hit]:
        """BM25 over ``Record.text`` in ``flt.collections``; hit ids are ``collection:id``."""

    async def get_meta(self, tenant: str, key: str) -> str | None:
        """A small per-tenant value (e.g. the embedding model id the vectors came from)."""


@runtime_checkable
class Store(MemoryReader, Protocol):
    """What the retrieval service needs from a storage backend. All methods are coroutines;
    a backend with a blocking client runs it off the event loop."""

    dimension: int
    """Vector dimension fixed when the store was opened."""

    # -- lifecycle ------------------------------------------------------------------------------
    async def close(self) -> None:
        """Flushes and releases everything; the store is unusable afterwards. Idempotent."""

    # -- notes ----------------------------------------------------------------------------------
    async def upsert_note(self, tenant: str, note: Note) -> None:
        """Creates or replaces the note with ``note.id``: its metadata, *all* its chunks (chunks of
        the previous version not in ``note.chunks`` are deleted with their vectors), its outgoing
        links and its chunks' mentions. Durable and all-or-nothing as the module doc says."""

    async def delete_notes(self, tenant: str, note_ids: Sequence[str]) -> int:
        """Deletes the notes with their chunks, vectors, outgoing links and mentions. Unknown ids
        are ignored. Returns how many notes existed."""

    async def notes_by_key(self, tenant: str, keys: Sequence[str]) -> dict[str, list[NoteMeta]]:
        """For each ``link_key`` given, the notes having it in ``Note.keys`` (absent if none).
        Resolves wikilink targets and entity names to notes."""

    async def note_chunks(self, tenant: str, note_id: str) -> list[ChunkView]:
        """Every chunk of one note, in ordinal order; empty for an unknown note."""

    async def set_entity_mentions(
        self, tenant: str, entity_id: str, chunk_ids: Sequence[str]
    ) -> None:
        """Replaces the set of chunks mentioning ``entity_id`` (used when an entity is created or
        renamed after the notes were indexed). Unknown chunk ids are ignored."""

    # -- records --------------------------------------------------------------------------------
    async def upsert_records(self, tenant: str, records: Sequence[Record]) -> int:
        """Creates or replaces records by ``(collection, id)``, in one durable batch. Returns the
        count written."""

    async def delete_records(self, tenant: str, collection: str, ids: Sequence[str]) -> int:
        """Deletes records by id; unknown ids are ignored. Returns how many existed."""

    async def record_sources(self, tenant: str) -> dict[str, set[str]]:
        """``{source: {collection:id, ...}}`` for every stored record, so the indexer can remove
        records a JSON Lines file no longer holds."""

    # -- forgetting (verified deletion) ----------------------------------------------------------
    async def note_traces(
        self, tenant: str, note_id: str, chunk_ids: Sequence[str]
    ) -> dict[str, int]:
        """What the backend holds of one note, read from its own tables or objects (not through
        search): ``{kind: count}`` for every kind in ``TRACE_KINDS``. ``chunk_ids`` are the note's
        chunks as they were before a delete, so chunks, vectors, keyword rows and mentions left
        behind by an incomplete delete are still found. Each kind is 0 for a forgotten note."""

    async def scrub(self, tenant: str) -> bool:
        """After a forget: makes what was deleted unrecoverable from the backend's own files, as
        far as the backend allows (merging index segments that still hold deleted terms,
        truncating write-ahead logs). True when done; False when the backend cannot promise it
        (its files keep deleted bytes until a compaction memex cannot force)."""

    # -- metadata -------------------------------------------------------------------------------
    async def set_meta(self, tenant: str, key: str, value: str) -> None:
        """Sets a per-tenant value, durably."""

    async def stats(self, tenant: str) -> StoreStats:
        """Counts of what the tenant has stored."""

    async def warm(self, tenant: str) -> None:
        """Loads whatever the tenant's searches build on first use, so the first search after
        a start does not pay for it (nothing, for a backend that keeps no such state)."""

    async def delete_tenant(self, tenant: str) -> None:
        """Removes everything of the tenant; idempotent."""

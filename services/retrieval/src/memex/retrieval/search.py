"""Hybrid search (SPEC B5): run the channels, fuse, adjust, optionally rerank, resolve citations.

Channels: ``vector`` and ``keyword`` over chunks (and over any record collections the filter
names explicitly), ``graph`` (the chunks of notes the query names by title or alias, then chunks
mentioning entities named in the query, then chunks of the wikilink neighbourhood of those notes
and entities and of the top vector/keyword results, ranked by vector similarity), ``beliefs``
(active, plus contested when asked) and ``observations``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from memex.retrieval import metrics, note_names
from memex.retrieval.embedder import Embedder, check_model
from memex.retrieval.fusion import ChannelHit, Fusion, fuse, recency_factor, rrf, salience_factor
from memex.retrieval.history.as_of import MemoryAsOf
from memex.retrieval.ingest.indexer import MATCHER_META
from memex.retrieval.ingest.records_io import entity_matcher
from memex.retrieval.items import Item, chunk_item, fill_chunk, record_item, record_salience
from memex.retrieval.names import NameMatcher
from memex.retrieval.rerank import Reranker, rerank_items
from memex.retrieval.store.base import Hit, MemoryReader, NoteMeta, Record, SearchFilter
from memex.shared.dates import parse_as_of
from memex.shared.errors import InvalidArgument

CHANNELS = ("vector", "keyword", "graph", "beliefs", "observations")
DEFAULT_CHANNELS = ("vector", "keyword", "graph")
RECORD_CHANNELS = {"beliefs": "beliefs", "observations": "observations"}
GRAPH_SEEDS = 3
_T = TypeVar("_T")


@dataclass(frozen=True)
class Filters:
    """Search filters as the API gives them."""

    start: str = ""
    end: str = ""
    collections: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    include_sensitive: bool = False
    exclude_notes: bool = False
    include_contested: bool = False


@dataclass(frozen=True)
class Query:
    """One search request."""

    tenant: str
    text: str
    channels: tuple[str, ...] = ()
    filters: Filters = Filters()
    k: int = 0
    observation_weight: float = 0.0
    as_of: str = ""
    """YYYY-MM-DD: search the memory as it stood at the end of that day; "" for now."""


@dataclass(frozen=True)
class Tuning:
    """Fusion, adjustment and rerank parameters (from settings)."""

    rrf_k: float
    weights: dict[str, float]
    depth: int
    half_life_days: float
    recency_weight: float
    salience_weight: float
    default_k: int
    max_k: int
    collections: tuple[str, ...]
    fusion: Fusion = "rrf"
    rerank_depth: int = 30
    rerank_weight: float = 1.0


@dataclass
class SearchResult:
    """Items in descending score, and where the time went."""

    items: list[Item]
    embed_ms: float
    search_ms: float


class Searcher:
    """Runs hybrid searches over a store."""

    def __init__(
        self,
        store: MemoryReader,
        embedder: Embedder,
        tuning: Tuning,
        today: Callable[[], dt.date] = lambda: dt.datetime.now(dt.UTC).date(),
        reranker: Reranker | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._t = tuning
        self._reranker = reranker
        self._today = today
        # (meta key, tenant) -> (the token the indexer last wrote under that key, what it built)
        self._derived: dict[tuple[str, str], tuple[str, Any]] = {}

    def _check(self, query: Query) -> tuple[tuple[str, ...], int]:
        if not query.text.strip():
            raise InvalidArgument("query is empty: say what to search for")
        if len(query.text) > 4000:
            raise InvalidArgument("query is longer than 4000 characters; shorten it")
        unknown = [c for c in query.channels if c not in CHANNELS]
        if unknown:
            raise InvalidArgument(f"unknown channel {unknown[0]!r}: use {', '.join(CHANNELS)}")
        bad = [c for c in query.filters.collections if c not in self._t.collections]
        if bad:
            raise InvalidArgument(
                f"collection {bad[0]!r} is not allowlisted: use {', '.join(self._t.collections)}"
            )
        for bound in (query.filters.start, query.filters.end):
            if bound:
                try:
                    dt.date.fromisoformat(bound)
                except ValueError:
                    raise InvalidArgument(
                        f"time window bound {bound!r} is not YYYY-MM-DD"
                    ) from None
        if query.k < 0 or query.k > self._t.max_k:
            raise InvalidArgument(f"k must be between 0 and {self._t.max_k}, got {query.k}")
        return query.channels or DEFAULT_CHANNELS, query.k or self._t.default_k

    async def search(self, query: Query) -> SearchResult:
        """Embeds the query, runs the channels, fuses and adjusts; see the module doc."""
        channels, k = self._check(query)
        if query.as_of:
            return await self._search_as_of(query)
        # The model check is a store call and the query's vector the embedding service's: both
        # at once (a round trip saved on Weaviate).
        (vector, embed_seconds), _ = await asyncio.gather(
            self._embed_query(query.text),
            check_model(self._store, query.tenant, self._embedder.model_id),
        )
        embedded = time.perf_counter()
        metrics.QUERY_EMBED_SECONDS.observe(embed_seconds)
        lists = await self.run_channels(query, channels, vector)
        weights = dict(self._t.weights)
        if query.observation_weight > 0:
            weights["observations"] = weights.get("observations", 1.0) * query.observation_weight
        for channel, hits in lists.items():
            metrics.CHANNEL_HITS.labels(channel).observe(len(hits))
        fused, seen = fuse(lists, weights, self._t.fusion, self._t.rrf_k)
        # Only the items that can be returned (or reranked) are built and get their texts.
        depth = max(self._t.rerank_depth, k) if self._reranker is not None else k
        head = await self._hydrate(query.tenant, await self.rank(query.tenant, fused, seen, depth))
        if self._reranker is not None:
            head = await rerank_items(self._reranker, query.text, head, self._t.rerank_weight)
        ranked = head[:k]
        done = time.perf_counter()
        return SearchResult(ranked, embed_seconds * 1000, (done - embedded) * 1000)

    async def _search_as_of(self, query: Query) -> SearchResult:
        """The search over the memory as it stood at the end of ``query.as_of``, with that day
        as today (``history.as_of``)."""
        day = parse_as_of(query.as_of, self._today())
        view = await MemoryAsOf.open(self._store, query.tenant, day)
        then = Searcher(view, self._embedder, self._t, lambda: day, self._reranker)
        return await then.search(dataclasses.replace(query, as_of=""))

    async def _embed_query(self, text: str) -> tuple[np.ndarray[Any, Any], float]:
        """The query's vector and the seconds embedding it took."""
        started = time.perf_counter()
        vector = (await self._embedder.embed([text], "query"))[0]
        return vector, time.perf_counter() - started

    def _filters(self, f: Filters) -> SearchFilter:
        return SearchFilter(
            date_from=f.start or None,
            date_to=f.end or None,
            tags=tuple(t.lstrip("#").casefold() for t in f.tags),
            include_sensitive=f.include_sensitive,
        )

    async def run_channels(
        self, query: Query, channels: Sequence[str], vector: np.ndarray[Any, Any]
    ) -> dict[str, list[Hit]]:
        """Each requested channel's ranked hits (chunk ids or ``collection:id``).

        The channels that need nothing from each other (vector, keyword, the record channels)
        run together: on Weaviate each is a round trip to the cluster, so a search waits for the
        slowest instead of their sum. The embedded store runs its calls one at a time on its
        own thread either way. Graph runs last, since it starts from their top hits."""
        base = self._filters(query.filters)
        wanted = set(query.filters.collections)
        notes = not query.filters.exclude_notes
        independent: dict[str, Awaitable[list[Hit]]] = {}
        for channel in ("vector", "keyword"):
            if channel in channels:
                independent[channel] = self._direct_channel(channel, query, vector, base, notes)
        for channel, collection in RECORD_CHANNELS.items():
            if channel in channels and (not wanted or collection in wanted):
                independent[channel] = self._records_channel(query, collection, vector, base)
        results = await asyncio.gather(*(_timed(c, work) for c, work in independent.items()))
        found = dict(zip(independent, results, strict=True))
        out: dict[str, list[Hit]] = {c: found[c] for c in ("vector", "keyword") if c in found}
        if "graph" in channels and notes:
            out["graph"] = await _timed("graph", self._graph(query, vector, base, out))
        out.update((c, found[c]) for c in RECORD_CHANNELS if c in found)
        return out

    async def _direct_channel(
        self, channel: str, query: Query, vector: Any, base: SearchFilter, notes: bool
    ) -> list[Hit]:
        """The vector or keyword channel: chunks, plus records of the collections the filter
        names."""
        store, tenant, depth = self._store, query.tenant, self._t.depth
        if channel == "vector":
            chunks = functools.partial(store.search_chunks_vector, tenant, vector)
            records = functools.partial(store.search_records_vector, tenant, vector)
        else:
            chunks = functools.partial(store.search_chunks_keyword, tenant, query.text)
            records = functools.partial(store.search_records_keyword, tenant, query.text)
        hits = await chunks(depth, base) if notes else []
        plain = tuple(c for c in query.filters.collections if c not in RECORD_CHANNELS)
        if plain:
            hits = _merge(hits, await records(depth, dataclasses.replace(base, collections=plain)))
        return hits[:depth]

    async def _graph(
        self, query: Query, vector: Any, base: SearchFilter, found: dict[str, list[Hit]]
    ) -> list[Hit]:
        store, tenant, depth = self._store, query.tenant, self._t.depth
        # Three rounds of store calls, each round's calls together (see ``run_channels``).
        names, matcher = await asyncio.gather(self._names(tenant), self._matcher(tenant))
        named_notes, named = names(query.text), sorted(matcher(query.text))
        top = [
            h.id for channel in ("vector", "keyword") for h in found.get(channel, [])[:GRAPH_SEEDS]
        ]
        own_hits, mentioned, entity_notes, views = await asyncio.gather(
            store.search_chunks_vector(
                tenant, vector, depth, dataclasses.replace(base, note_ids=frozenset(named_notes))
            )
            if named_notes
            else _nothing(list[Hit]()),
            store.chunks_mentioning(tenant, named, depth, base) if named else _nothing(list[Hit]()),
            store.notes_for_records(tenant, [f"entities:{e}" for e in named])
            if named
            else _nothing(dict[str, NoteMeta]()),
            store.get_chunks(tenant, top),
        )
        # Scored as a chunk naming a named entity is (1): the raw scores are what convex
        # fusion reads, and a named note is as good a graph hit as a mention.
        own = [Hit(h.id, 1.0) for h in own_hits]
        seeds = set(named_notes) | {n.id for n in entity_notes.values()}
        seeds |= {v.note.id for v in views.values()}
        neighbours: set[str] = set()
        for linked in (await store.linked_notes(tenant, sorted(seeds))).values():
            neighbours |= linked
        neighbours -= {v.note.id for v in views.values()} | set(named_notes)
        around: list[Hit] = []
        if neighbours:
            flt = dataclasses.replace(base, note_ids=frozenset(neighbours))
            around = await store.search_chunks_vector(tenant, vector, depth, flt)
        ranked: list[Hit] = []
        seen: set[str] = set()
        for hit in own + mentioned + around:
            if hit.id not in seen:
                seen.add(hit.id)
                ranked.append(hit)
        return ranked[:depth]

    async def _names(self, tenant: str) -> NameMatcher:
        """The tenant's note titles and aliases, reloaded only when an index run changed its
        notes."""
        names: NameMatcher = await self._rebuilt(
            tenant, note_names.NOTE_NAMES_META, lambda: note_names.load(self._store, tenant)
        )
        return names

    async def _matcher(self, tenant: str) -> NameMatcher:
        """The tenant's entity-name matcher, rebuilt only when the indexer has recorded a new
        set of entity names (vault re-index or entity upsert/delete)."""

        matcher: NameMatcher = await self._rebuilt(
            tenant, MATCHER_META, lambda: entity_matcher(self._store, tenant)
        )
        return matcher

    async def _rebuilt(self, tenant: str, key: str, build: Callable[[], Awaitable[Any]]) -> Any:
        """What ``build`` made for the tenant, made again only when the token the indexer
        writes under the meta ``key`` has changed since."""
        token = await self._store.get_meta(tenant, key) or ""
        cached = self._derived.get((key, tenant))
        if cached is not None and cached[0] == token:
            return cached[1]
        value = await build()
        self._derived[(key, tenant)] = (token, value)
        return value

    async def _records_channel(
        self, query: Query, collection: str, vector: Any, base: SearchFilter
    ) -> list[Hit]:
        store, tenant, depth = self._store, query.tenant, self._t.depth
        flt = dataclasses.replace(base, collections=(collection,))
        by_vector, by_words = await asyncio.gather(
            store.search_records_vector(tenant, vector, depth, flt),
            store.search_records_keyword(tenant, query.text, depth, flt),
        )
        fused, _ = rrf({"v": by_vector, "k": by_words}, {}, self._t.rrf_k)
        hits = [Hit(i, s) for i, s in sorted(fused.items(), key=lambda p: (-p[1], p[0]))]
        if collection == "beliefs":
            records = await store.get_records(tenant, [h.id for h in hits])
            allowed = {"active", "contested"} if query.filters.include_contested else {"active"}
            hits = [
                h
                for h in hits
                if str(records[h.id].fields.get("status", "active")).casefold() in allowed
            ]
        return hits[:depth]

    async def rank(
        self,
        tenant: str,
        fused: dict[str, float],
        seen: dict[str, list[ChannelHit]],
        limit: int | None = None,
    ) -> list[Item]:
        """The best ``limit`` (None: all) fused candidates that still exist, adjusted for
        recency and salience and in descending score (ties by id). Chunks carry their note's
        metadata but no text yet: the order needs only the fused score, the date and the
        salience, and fetching the texts of every candidate (~200) cost as much as the vector
        channel (see ``_hydrate``); only the items returned are built."""
        chunk_ids = [i for i in fused if ":" not in i]
        refs = [i for i in fused if ":" in i]
        store = self._store
        chunk_notes, records, notes = await asyncio.gather(
            store.chunk_notes(tenant, chunk_ids),
            store.get_records(tenant, refs) if refs else _nothing(dict[str, Record]()),
            store.notes_for_records(tenant, refs) if refs else _nothing(dict[str, NoteMeta]()),
        )
        today, t = self._today(), self._t
        scored: list[tuple[float, str, float, float]] = []
        dated = [(cid, n.date, n.salience) for cid, n in chunk_notes.items()]
        dated += [(ref, r.date or "", record_salience(r)) for ref, r in records.items()]
        for item_id, date, salience in dated:
            recency = recency_factor(date, today, t.half_life_days, t.recency_weight)
            factor = salience_factor(salience, t.salience_weight)
            scored.append((fused[item_id] * recency * factor, item_id, recency, factor))
        scored.sort(key=lambda s: (-s[0], s[1]))
        out: list[Item] = []
        for score, item_id, recency, factor in scored[:limit]:
            note, channels, value = chunk_notes.get(item_id), seen[item_id], fused[item_id]
            item = (
                chunk_item(item_id, note, channels, value)
                if note is not None
                else record_item(records[item_id], notes.get(item_id), channels, value)
            )
            item.recency, item.salience, item.score = recency, factor, score
            out.append(item)
        return out

    async def _hydrate(self, tenant: str, items: list[Item]) -> list[Item]:
        """Fills in the text, heading and offsets of the chunks among ``items`` (records come
        whole from ``rank``); a chunk deleted since it was ranked is dropped."""
        views = await self._store.get_chunks(tenant, [i.id for i in items if i.kind == "chunk"])
        out: list[Item] = []
        for item in items:
            if item.kind == "chunk":
                view = views.get(item.id)
                if view is None:
                    continue
                fill_chunk(item, view.text, view.heading)
                item.attributes.update(start=view.start, end=view.end)
            out.append(item)
        return out


async def _nothing(value: _T) -> _T:
    """``value``, as an awaitable: a call a search round leaves out."""
    return value


async def _timed(channel: str, work: Awaitable[list[Hit]]) -> list[Hit]:
    """``work``'s hits, its time observed into the channel histogram."""
    started = time.perf_counter()
    hits = await work
    metrics.CHANNEL_SECONDS.labels(channel).observe(time.perf_counter() - started)
    return hits


def _merge(a: list[Hit], b: list[Hit]) -> list[Hit]:
    return sorted(a + b, key=lambda h: (-h.score, h.id))

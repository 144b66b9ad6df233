"""The Weaviate backend's search channels: HNSW nearest neighbours (``near_vector``) and BM25
over chunks or records, pre-filtered, and chunks by the entities they mention.

Weaviate answers at most ``QUERY_MAXIMUM_RESULTS`` (10,000 by default) hits per query, so a
search asking for more returns at most ``MAX_K``. Split from ``weaviate``, whose
``WeaviateStore`` search methods call these.
"""

from __future__ import annotations

from collections.abc import Sequence

from weaviate.classes.query import MetadataQuery

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store.base import Hit, SearchFilter, Vector
from memex.retrieval.store.keyword_terms import query_terms, query_words
from memex.retrieval.store.weaviate_base import MAX_RESULTS, WeaviateCollections
from memex.retrieval.store.weaviate_schema import VECTOR

TIE_SLACK = 10  # extra hits fetched so equal scores at the k-th place break by id, as specified
MAX_K = MAX_RESULTS - TIE_SLACK  # Weaviate answers at most QUERY_MAXIMUM_RESULTS hits per query


async def vector_hits(
    cols: WeaviateCollections,
    kind: str,
    tenant: str,
    vector: Vector,
    k: int,
    flt: SearchFilter,
    key: str,
) -> list[Hit]:
    """The ``k`` objects of ``kind`` nearest to ``vector`` (cosine) passing ``flt``, as hits
    named by the property ``key``."""
    query = codec.check_vector(vector, cols.dimension, "the query vector")
    name = await cols._readable(tenant)
    records = kind == "record"
    if name is None or k <= 0 or codec.matches_nothing(flt, records=records):
        return []
    reply = await cols._col(kind, name).query.near_vector(
        query,
        target_vector=VECTOR,
        limit=min(k, MAX_K) + TIE_SLACK,
        filters=codec.search_filter(flt, records=records),
        return_metadata=MetadataQuery(distance=True),
        return_properties=[key],
    )
    hits = [
        Hit(str(o.properties[key]), 1.0 - float(o.metadata.distance or 0.0)) for o in reply.objects
    ]
    return codec.top_hits(hits, k)


async def keyword_hits(
    cols: WeaviateCollections,
    kind: str,
    tenant: str,
    query: str,
    k: int,
    flt: SearchFilter,
    key: str,
    prop: str,
) -> list[Hit]:
    """The ``k`` best BM25 matches of ``query`` over the property ``prop`` of the objects of
    ``kind`` passing ``flt``, as hits named by the property ``key``."""
    records = kind == "record"
    # Chunks hold their search text as analysed terms (codec.indexed_text); records their
    # text as written, which Weaviate's own tokenizer lower-cases.
    words = query_words(query) if records else query_terms(query)
    name = await cols._readable(tenant)
    if name is None or not words or k <= 0 or codec.matches_nothing(flt, records=records):
        return []
    reply = await cols._col(kind, name).query.bm25(
        " ".join(words),
        query_properties=[prop],
        limit=min(k, MAX_K) + TIE_SLACK,
        filters=codec.search_filter(flt, records=records),
        return_metadata=MetadataQuery(score=True),
        return_properties=[key],
    )
    hits = [Hit(str(o.properties[key]), float(o.metadata.score or 0.0)) for o in reply.objects]
    return codec.top_hits([h for h in hits if h.score > 0], k)


async def mentioning_hits(
    cols: WeaviateCollections, tenant: str, entity_ids: Sequence[str], k: int, flt: SearchFilter
) -> list[Hit]:
    """Chunks mentioning the entities: more entities first, then newer, then by id."""
    name = await cols._readable(tenant)
    if name is None or not entity_ids or k <= 0 or codec.matches_nothing(flt, records=False):
        return []
    where = codec.any_of("mentions", sorted(set(entity_ids)))
    extra = codec.search_filter(flt, records=False)
    where = where if extra is None else where & extra
    rows = await cols._fetch(cols._col("chunk", name), where, ["chunk_id", "mentions", "day"])
    wanted = set(entity_ids)
    scored = [
        (len(wanted & set(r.get("mentions") or ())), int(r.get("day") or 0), str(r["chunk_id"]))
        for r in rows
    ]
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    return [Hit(chunk_id, float(score)) for score, _, chunk_id in scored[:k]]

"""What the Weaviate backend counts of a tenant: what is left of one note (``note_traces``, the
lines of a forget receipt) and the tenant's totals (``stats``), read from the objects themselves.

Split from ``weaviate``, whose ``WeaviateStore`` methods of the same names call these.
"""

from __future__ import annotations

from collections.abc import Sequence

from weaviate.collections.classes.aggregate import Metrics

from memex.retrieval.store import weaviate_codec as codec
from memex.retrieval.store.counts import TRACE_KINDS, StoreStats
from memex.retrieval.store.weaviate_base import WeaviateCollections


async def note_traces(
    cols: WeaviateCollections, tenant: str, note_id: str, chunk_ids: Sequence[str]
) -> dict[str, int]:
    """Every kind of ``TRACE_KINDS`` still held of the note (see ``WeaviateStore.note_traces``)."""
    counts = dict.fromkeys(TRACE_KINDS, 0)
    name = await cols._readable(tenant)
    if name is None:
        return counts
    notes = await cols._fetch_ids(
        cols._col("note", name),
        "note_id",
        [note_id],
        ["note_id", "keys", "record_keys", "link_count"],
    )
    chunk_col, props = cols._col("chunk", name), ["chunk_id", "mentions"]
    rows = await cols._fetch_ids(chunk_col, "note_id", [note_id], props)
    if chunk_ids:
        rows += await cols._fetch_ids(chunk_col, "chunk_id", chunk_ids, props)
    chunks = {str(r["chunk_id"]): r for r in rows}
    counts["notes"] = len(notes)
    counts["chunks"] = counts["vectors"] = counts["keyword index rows"] = len(chunks)
    counts["outgoing links"] = sum(int(n.get("link_count") or 0) for n in notes)
    counts["entity mentions"] = sum(len(c.get("mentions") or ()) for c in chunks.values())
    counts["name keys"] = sum(len(n.get("keys") or ()) for n in notes)
    counts["record links"] = sum(len(n.get("record_keys") or ()) for n in notes)
    return counts


async def stats(cols: WeaviateCollections, tenant: str) -> StoreStats:
    """Counts by aggregation (links and mentions are summed per note and per chunk)."""
    name = await cols._readable(tenant)
    if name is None:
        return StoreStats(0, 0, 0, 0, 0)
    notes = await cols._col("note", name).aggregate.over_all(
        total_count=True, return_metrics=Metrics("link_count").integer(sum_=True)
    )
    chunks = await cols._col("chunk", name).aggregate.over_all(
        total_count=True, return_metrics=Metrics("mention_count").integer(sum_=True)
    )
    records = await cols._col("record", name).aggregate.over_all(total_count=True)
    return StoreStats(
        notes=notes.total_count or 0,
        chunks=chunks.total_count or 0,
        records=records.total_count or 0,
        links=codec.metric_sum(notes.properties.get("link_count")),
        mentions=codec.metric_sum(chunks.properties.get("mention_count")),
    )

"""Prometheus metrics of the retrieval stage (``memex_retrieval_*``), low-cardinality labels."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from memex.shared.metrics import LATENCY_BUCKETS

CHANNEL_SECONDS = Histogram(
    "memex_retrieval_channel_seconds",
    "Time one search channel took (query embedding excluded).",
    ["channel"],
    buckets=LATENCY_BUCKETS,
)
CHANNEL_HITS = Histogram(
    "memex_retrieval_channel_hits",
    "Candidates one search channel contributed to fusion.",
    ["channel"],
    buckets=(0, 1, 5, 10, 25, 50, 100, 250),
)
QUERY_EMBED_SECONDS = Histogram(
    "memex_retrieval_query_embed_seconds",
    "Time to embed one search query through the embedding service.",
    buckets=LATENCY_BUCKETS,
)
RERANK_SECONDS = Histogram(
    "memex_retrieval_rerank_seconds",
    "Time the rerank model took to rescore one search's candidates.",
    buckets=LATENCY_BUCKETS,
)
NOTES_INDEXED = Counter(
    "memex_retrieval_notes_indexed_total",
    "Notes handled by indexing runs, by outcome.",
    ["outcome"],  # added, updated, removed, unchanged, skipped
)
CHUNKS_EMBEDDED = Counter("memex_retrieval_chunks_embedded_total", "Chunks embedded and stored.")

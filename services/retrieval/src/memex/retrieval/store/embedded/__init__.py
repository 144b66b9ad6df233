"""The embedded default backend: SQLite (WAL, FTS5 BM25) as the source of truth, usearch HNSW
as the vector index derived from it. See ``schema`` and ``ann`` for the durability story."""

from memex.retrieval.store.embedded.store import EmbeddedStore

__all__ = ["EmbeddedStore"]

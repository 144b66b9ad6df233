"""The embedded store's vector searches (worker thread only): HNSW nearest neighbours under a
filter, for chunks (filtered by the chunk catalogue) and for records (filtered in SQL).

Split from ``store``, which loads the indexes these functions search and runs them on its
worker thread.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.store.base import Hit, SearchFilter
from memex.retrieval.store.embedded import record_queries
from memex.retrieval.store.embedded.ann import AnnIndex
from memex.retrieval.store.embedded.catalog import ChunkCatalog
from memex.retrieval.store.embedded.schema import is_trivial

# A filtered vector search scans candidates exactly when there are at most this many; beyond,
# it asks HNSW for more and more neighbours until enough pass the filter.
EXACT_CANDIDATES = 50_000


def nearest(
    ann: AnnIndex,
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


def chunk_hits(
    catalog: ChunkCatalog, ann: AnnIndex, query: NDArray[np.float32], k: int, flt: SearchFilter
) -> list[Hit]:
    """The ``k`` chunks nearest to ``query`` among those passing ``flt`` (see ``nearest``)."""
    if is_trivial(flt):
        found = nearest(ann, query, k, None, list)
    else:
        found = nearest(
            ann,
            query,
            k,
            functools.partial(catalog.passing, flt=flt),
            functools.partial(catalog.candidates, flt),
            # A list of notes (the graph channel's few) is scanned exactly anyway.
            catalog.share(flt) if flt.note_ids is None else None,
        )
    ids = catalog.ids([key for key, _ in found])
    return _hits((ids[key], score) for key, score in found if key in ids)[:k]


def record_hits(
    conn: sqlite3.Connection,
    ann: AnnIndex,
    tenant: str,
    query: NDArray[np.float32],
    k: int,
    flt: SearchFilter,
) -> list[Hit]:
    """The ``k`` records nearest to ``query`` among those with a vector passing ``flt``."""
    found = nearest(
        ann,
        query,
        k,
        lambda keys: set(record_queries.record_candidates(conn, tenant, flt, keys)),
        lambda: record_queries.record_candidates(conn, tenant, flt),
    )
    refs = record_queries.record_refs_by_rowid(conn, [key for key, _ in found])
    return _hits((refs[key], score) for key, score in found if key in refs)[:k]


def _hits(pairs: Any) -> list[Hit]:
    hits = [Hit(id=i, score=float(s)) for i, s in pairs]
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits

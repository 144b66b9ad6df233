"""The approximate nearest-neighbour index (usearch HNSW), derived from SQLite and repairable.

One index per (tenant, kind) lives in memory, keyed by the SQLite rowid. It is saved on close with
a sidecar holding the SQLite generation it reflects; on open, an index whose sidecar does not
match the database's generation (a crash, a kill -9, a lost file) is rebuilt from the vectors in
SQLite, so the index can be stale only in memory, never on the next start.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from usearch.index import Index

log = logging.getLogger(__name__)

CONNECTIVITY = 16
EXPANSION_ADD = 128
# Chosen by recall per millisecond at 200k chunks (docs/retrieval.md, "Speed at scale"):
# recall@10 0.984 in 0.94 ms against 0.992 in 1.7 ms at 512. A search asking for more
# neighbours than this widens it to that many.
EXPANSION_SEARCH = 256
# Below this many vectors an exact scan is as fast as HNSW and has perfect recall.
EXACT_BELOW = 5_000


def new_index(dimension: int) -> Index:
    """An empty cosine HNSW index of float32 vectors."""
    return Index(
        ndim=dimension,
        metric="cos",
        dtype="f32",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


class AnnIndex:
    """An HNSW index over (rowid, vector) pairs with exact search for small sizes and subsets."""

    def __init__(self, dimension: int, path: Path) -> None:
        self.dimension = dimension
        self.path = path
        self.index = new_index(dimension)

    def __len__(self) -> int:
        return len(self.index)

    def add(self, keys: NDArray[np.uint64], vectors: NDArray[np.float32]) -> None:
        """Adds (or, for an existing key, replaces) vectors."""
        if len(keys) == 0:
            return
        present = self.index.contains(keys)
        if np.any(present):
            self.index.remove(keys[present])
        self.index.add(keys, vectors)

    def remove(self, keys: Iterable[int]) -> None:
        """Removes keys; unknown keys are ignored."""
        array = np.fromiter(keys, dtype=np.uint64)
        if len(array):
            present = self.index.contains(array)
            if np.any(present):
                self.index.remove(array[present])

    def search(self, vector: NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest keys with cosine similarity, exact when the index is small."""
        size = len(self.index)
        if size == 0 or k <= 0:
            return []
        matches = self.index.search(vector, min(k, size), exact=size < EXACT_BELOW)
        return [
            (int(key), 1.0 - float(dist))
            for key, dist in zip(matches.keys, matches.distances, strict=True)
        ]

    def search_subset(
        self, vector: NDArray[np.float32], keys: NDArray[np.uint64], k: int
    ) -> list[tuple[int, float]]:
        """Exact search restricted to ``keys`` (pre-filtered candidates)."""
        keys = keys[self.index.contains(keys)] if len(keys) else keys
        if len(keys) == 0:
            return []
        vectors = np.asarray(self.index.get(keys), dtype=np.float32)
        scores = vectors @ vector
        top = np.argsort(-scores, kind="stable")[:k]
        return [(int(keys[i]), float(scores[i])) for i in top]

    # -- persistence ---------------------------------------------------------------------------
    def save(self, generation: int) -> None:
        """Writes the index, then the sidecar naming the generation it reflects (atomically)."""
        tmp = self.path.with_suffix(".tmp")
        self.index.save(str(tmp))
        os.replace(tmp, self.path)
        side = self.path.with_suffix(".json")
        side_tmp = side.with_suffix(".json.tmp")
        side_tmp.write_text(json.dumps({"generation": generation, "size": len(self.index)}))
        os.replace(side_tmp, side)

    def load_if_current(self, generation: int) -> bool:
        """Loads the saved index if its sidecar matches ``generation``; False means rebuild."""
        side = self.path.with_suffix(".json")
        try:
            saved = json.loads(side.read_text())
        except (OSError, ValueError):
            return False
        if saved.get("generation") != generation or not self.path.exists():
            return False
        try:
            self.index.load(str(self.path))
        except Exception:  # a torn or foreign file: rebuilding is always safe
            log.warning("ANN index %s unreadable; rebuilding from SQLite", self.path)
            self.index = new_index(self.dimension)
            return False
        # A search setting, not taken from the file (settable at run time; typed read-only).
        self.index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        if len(self.index) != saved.get("size"):
            self.index = new_index(self.dimension)
            return False
        return True

    def invalidate(self) -> None:
        """Removes the sidecar so a crash before the next save forces a rebuild."""
        side = self.path.with_suffix(".json")
        if side.exists():
            side.unlink()

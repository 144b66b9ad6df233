"""Helpers for tests of the retrieval service and of storage backends (contract suite).

They live in the package, like ``memex.shared.testing``, so every backend's tests can use them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import textwrap
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memex.retrieval.search import Tuning
from memex.retrieval.store.base import Chunk, Link, Note, Record, link_key

DIM = 8


class FixedEmbedder:
    """An embedder that gives every text the same vector (``vec(1.0, 0.5)``): for searches
    whose ranking the test sets through the stored vectors, not through the query's."""

    dimension = DIM
    model_id = "fixed"

    async def embed(self, texts: Sequence[str], kind: str) -> np.ndarray[Any, Any]:
        """The fixed vector, once per text."""
        return np.array([vec(1.0, 0.5)] * len(texts), dtype=np.float32)


def tuning(**changes: Any) -> Tuning:
    """Search parameters for tests: RRF k=10, every default channel weighted 1, depth 60,
    recency and salience off, k=10 (at most 200); ``changes`` override any of them."""
    base = Tuning(
        rrf_k=10,
        weights={"vector": 1.0, "keyword": 1.0, "graph": 1.0},
        depth=60,
        half_life_days=0,
        recency_weight=0.0,
        salience_weight=0.0,
        default_k=10,
        max_k=200,
        collections=(),
    )
    return dataclasses.replace(base, **changes)


def vec(*weights: float) -> list[float]:
    """An L2-normalised vector from up to DIM leading weights (the rest zero)."""
    values = np.zeros(DIM, dtype=np.float32)
    values[: len(weights)] = weights
    norm = float(np.linalg.norm(values)) or 1.0
    return [float(v) for v in values / norm]


def random_unit(rng: random.Random) -> list[float]:
    """A random L2-normalised DIM vector."""
    values = [rng.gauss(0, 1) for _ in range(DIM)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def axis(i: int) -> list[float]:
    """The unit vector along dimension ``i``."""
    values = [0.0] * DIM
    values[i % DIM] = 1.0
    return values


def chunk(note_id: str, ordinal: int, text: str, vector: list[float], **kw: object) -> Chunk:
    """A chunk of ``note_id`` whose search text is ``text``."""
    return Chunk(
        id=f"{note_id}#{ordinal}",
        note_id=note_id,
        ordinal=ordinal,
        text=text,
        heading=str(kw.get("heading", "")),
        start=0,
        end=len(text),
        search_text=text,
        vector=vector,
        mentions=tuple(kw.get("mentions", ())),  # type: ignore[arg-type]
    )


def note(
    title: str,
    texts: list[tuple[str, list[float]]],
    *,
    date: str = "2024-01-01",
    tags: tuple[str, ...] = (),
    links: tuple[str, ...] = (),
    sensitive: bool = False,
    record_keys: tuple[str, ...] = (),
    mentions: tuple[str, ...] = (),
    path: str | None = None,
    version: str = "1",
) -> Note:
    """A note titled ``title`` with one chunk per ``(text, vector)``."""
    path = path or f"{title}.md"
    note_id = hashlib.sha1(path.encode()).hexdigest()[:16]
    return Note(
        id=note_id,
        path=path,
        title=title,
        date=date,
        fingerprint=f"{path}:{version}",
        tags=tags,
        keys=(link_key(title),),
        record_keys=record_keys,
        frontmatter={"title": title},
        sensitive=sensitive,
        links=tuple(Link(target_key=link_key(t)) for t in links),
        chunks=tuple(
            chunk(note_id, i, text, v, mentions=mentions) for i, (text, v) in enumerate(texts)
        ),
    )


def record(collection: str, rid: str, text: str, **kw: object) -> Record:
    """A record with ``text`` as its searchable text."""
    fields = dict(kw.pop("fields", {}) or {})  # type: ignore[call-overload]
    fields.setdefault("text", text)
    return Record(collection=collection, id=rid, fields=fields, text=text, **kw)  # type: ignore[arg-type]


def write(root: Path, rel: str, text: str) -> Path:
    """Writes a dedented file under ``root``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def weaviate_get(url: str, api_key: str) -> Any:
    """GET ``url`` of a Weaviate server's REST API as JSON; None when it answers 404 (an object
    that is not there)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise

"""Store benchmark: both backends on the same synthetic corpus, at growing sizes.

For each backend (the embedded store, and a real Weaviate server started here on loopback) and
each size, it loads chunks through ``Store.upsert_note`` and prints:

* load throughput (chunks/s; vectors are given, so no embedding time is in it),
* search latency p50/p99 of the vector and keyword channels (the store part of a search: query
  embedding excluded), sequential, ``--queries`` queries each,
* ANN recall@10 of the vector channel against exact search (numpy, all vectors),
* resident memory per 100k chunks (the Weaviate server's RSS growth; for the embedded store, this
  process's RSS growth less the benchmark's own copy of the vectors, since it runs in-process).

The corpus: ``--dim``-dimensional vectors drawn around 256 random centres (real embeddings are
clustered; uniform random vectors would be an unrealistically hard case for any ANN index),
L2-normalised; texts of 40 words drawn from a Zipf vocabulary of 20,000 pseudo-words; 50 chunks
per note. Queries are perturbed corpus vectors and three mid-frequency words.

    python benchmarks/bench_store.py --sizes 5000,200000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from memex.retrieval.store.base import Chunk, Note, SearchFilter, Store
from memex.retrieval.weaviate_server import WeaviateServer

CHUNKS_PER_NOTE = 50
ALL = SearchFilter()


def rss_bytes(pid: int) -> int:
    """Resident memory of a process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Corpus:
    """Deterministic synthetic chunks, generated in order."""

    def __init__(self, dim: int, seed: int = 7) -> None:
        self.dim = dim
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(256, dim)).astype(np.float32)
        self.vocab = np.array([f"w{i}" for i in range(20_000)])
        weights = 1.0 / np.arange(1, len(self.vocab) + 1)
        self.p = weights / weights.sum()
        self.vectors = np.zeros((0, dim), dtype=np.float32)

    def notes(self, start: int, count: int) -> list[Note]:
        """Notes holding chunks ``start .. start+count`` (count a multiple of CHUNKS_PER_NOTE)."""
        centre = self.rng.integers(0, len(self.centres), size=count)
        vectors = self.centres[centre] + 0.6 * self.rng.normal(size=(count, self.dim))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        self.vectors = np.vstack([self.vectors, vectors])
        words = self.rng.choice(self.vocab, size=(count, 40), p=self.p)
        notes = []
        for n in range(count // CHUNKS_PER_NOTE):
            note_no = (start // CHUNKS_PER_NOTE) + n
            note_id = f"n{note_no}"
            chunks = []
            for j in range(CHUNKS_PER_NOTE):
                i = n * CHUNKS_PER_NOTE + j
                text = " ".join(words[i])
                chunks.append(
                    Chunk(
                        id=f"c{start + i}",
                        note_id=note_id,
                        ordinal=j,
                        text=text,
                        heading="",
                        start=0,
                        end=len(text),
                        search_text=text,
                        vector=vectors[i],
                    )
                )
            day = 1 + note_no % 28
            notes.append(
                Note(
                    id=note_id,
                    path=f"notes/{note_no}.md",
                    title=f"Note {note_no}",
                    date=f"2024-01-{day:02d}",
                    fingerprint="1",
                    chunks=tuple(chunks),
                )
            )
        return notes

    def queries(self, count: int) -> tuple[np.ndarray, list[str]]:
        """Query vectors near corpus vectors, and three-word keyword queries."""
        pick = self.rng.integers(0, len(self.vectors), size=count)
        q = self.vectors[pick] + 0.3 * self.rng.normal(size=(count, self.dim)) / np.sqrt(self.dim)
        q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
        words = self.vocab[self.rng.integers(50, 2000, size=(count, 3))]
        return q, [" ".join(w) for w in words]


def pct(values: list[float], q: float) -> float:
    """The q-quantile in milliseconds."""
    return float(np.quantile(np.array(values), q) * 1000)


@contextlib.asynccontextmanager
async def open_backend(name: str, workdir: Path, dim: int) -> AsyncIterator[tuple[Store, int]]:
    """The store and the pid whose memory it uses."""
    if name == "embedded":
        from memex.retrieval.store.embedded import EmbeddedStore

        embedded = await EmbeddedStore.open(workdir / "embedded", dim)
        try:
            yield embedded, os.getpid()
        finally:
            await embedded.close()
        return
    from memex.retrieval.store.weaviate import WeaviateStore

    with WeaviateServer(workdir / "weaviate") as server:
        assert server._process is not None
        store = await WeaviateStore.connect(
            http_host=server.host,
            http_port=server.ports.http,
            grpc_port=server.ports.grpc,
            api_key=server.api_key,
            dimension=dim,
        )
        try:
            yield store, server._process.pid
        finally:
            await store.close()


async def bench_backend(
    name: str, args: argparse.Namespace, workdir: Path
) -> list[dict[str, float]]:
    """Loads up to each size in turn and measures there."""
    corpus = Corpus(args.dim)
    rows = []
    async with open_backend(name, workdir, args.dim) as (store, pid):
        base_rss = rss_bytes(pid)
        loaded = 0
        load_seconds = 0.0
        for size in args.sizes:
            notes = corpus.notes(loaded, size - loaded)
            began = time.perf_counter()
            for note in notes:
                await store.upsert_note("bench", note)
            load_seconds += time.perf_counter() - began
            loaded = size
            qv, qk = corpus.queries(args.queries)
            vec_lat, kw_lat, recalls = [], [], []
            for i in range(args.queries):
                t = time.perf_counter()
                hits = await store.search_chunks_vector("bench", qv[i], 10, ALL)
                vec_lat.append(time.perf_counter() - t)
                exact = np.argsort(-(corpus.vectors @ qv[i]))[:10]
                truth = {f"c{j}" for j in exact}
                recalls.append(len(truth & {h.id for h in hits}) / 10)
                t = time.perf_counter()
                await store.search_chunks_keyword("bench", qk[i], 10, ALL)
                kw_lat.append(time.perf_counter() - t)
            rss = rss_bytes(pid) - base_rss
            if pid == os.getpid():  # the exact-search copy of the vectors lives here too
                rss -= corpus.vectors.nbytes
            rows.append(
                {
                    "chunks": size,
                    "load_chunks_per_s": size / load_seconds,
                    "vector_p50_ms": pct(vec_lat, 0.5),
                    "vector_p99_ms": pct(vec_lat, 0.99),
                    "keyword_p50_ms": pct(kw_lat, 0.5),
                    "keyword_p99_ms": pct(kw_lat, 0.99),
                    "recall_at_10": statistics.fmean(recalls),
                    "rss_mb_per_100k": rss / size * 100_000 / 2**20,
                }
            )
            print(name, _fmt(rows[-1]), flush=True)
    return rows


def _fmt(row: dict[str, float]) -> str:
    return "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


async def main() -> None:
    """Runs every backend and prints a table with Weaviate/embedded ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="embedded,weaviate")
    parser.add_argument("--sizes", default="5000,200000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    args.sizes = sorted(int(s) // CHUNKS_PER_NOTE * CHUNKS_PER_NOTE for s in args.sizes.split(","))
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="memex-bench-") as tmp:
        for name in args.backends.split(","):
            results[name] = await bench_backend(name, args, Path(tmp) / name)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process {peak_mb:.0f} MB")
    print("\nbackend    chunks  load/s  vec p50  vec p99  kw p50  kw p99  recall@10  MB/100k")
    for name, rows in results.items():
        for r in rows:
            print(
                f"{name:<9} {r['chunks']:>7.0f} {r['load_chunks_per_s']:>7.0f} "
                f"{r['vector_p50_ms']:>8.2f} {r['vector_p99_ms']:>8.2f} "
                f"{r['keyword_p50_ms']:>7.2f} {r['keyword_p99_ms']:>7.2f} "
                f"{r['recall_at_10']:>10.3f} {r['rss_mb_per_100k']:>8.0f}"
            )
    if {"embedded", "weaviate"} <= results.keys():
        print("\nweaviate / embedded (same run, same corpus):")
        for e, w in zip(results["embedded"], results["weaviate"], strict=True):
            vec = w["vector_p50_ms"] / e["vector_p50_ms"]
            kw = w["keyword_p50_ms"] / e["keyword_p50_ms"]
            load = w["load_chunks_per_s"] / e["load_chunks_per_s"]
            print(
                f"  {e['chunks']:>7.0f} chunks: vector p50 x{vec:.2f}, keyword p50 x{kw:.2f}, "
                f"load throughput x{load:.2f}"
            )


if __name__ == "__main__":
    asyncio.run(main())

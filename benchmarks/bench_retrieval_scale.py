"""Part 2 of the retrieval benchmark: latency, ANN recall and memory at ~5k and at N chunks.

The large store is built once from the corpus store (see bench_retrieval.py) and kept in the
cache. Each measurement runs in a fresh process (``--measure``), so resident memory is that of a
store opened cold, not of the process that built it. Then each store is searched through the
real services (an embedding service and a retrieval service over that store, gRPC on loopback):
the server-side ``search_ms`` of 300 claims one at a time, which excludes the query's embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from numpy.typing import NDArray

from memex.embedding.catalogue import CATALOGUE
from memex.retrieval.embedder import MODEL_META
from memex.retrieval.search import Query, Searcher, Tuning
from memex.retrieval.store.base import Chunk, Note
from memex.retrieval.store.embedded import EmbeddedStore, queries, search_queries
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.health import wait_until_serving
from memex.testing import free_port

DIM = 384
TENANT = "default"
CHUNKS_PER_NOTE = 200
NOISE = 0.5  # cosine to the source vector ~ 1 / sqrt(1 + NOISE^2) ~ 0.89
RECALL_QUERIES = 200
SERVICE_WARMUP = 20  # searches before timing: the first ones wait for the indexes to load
SERVICE_QUERIES = 300


class FixedEmbedder:
    """Returns precomputed query vectors, so timings exclude query embedding. It answers to the
    model the store was indexed with (the vectors were made by it), so the model check passes."""

    dimension = DIM

    def __init__(self, table: dict[str, NDArray[np.float32]], model_id: str = "") -> None:
        self._table = table
        self.model_id = model_id

    async def embed(self, texts: Sequence[str], kind: str) -> NDArray[np.float32]:
        """The stored vector of each text."""
        return np.stack([self._table[t] for t in texts])


def rss_mib() -> float:
    """This process's resident memory in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _tuning() -> Tuning:
    from memex.retrieval.config import RetrievalSettings

    s = RetrievalSettings()
    return Tuning(
        rrf_k=s.rrf_k,
        weights={"vector": s.vector_weight, "keyword": s.keyword_weight, "graph": s.graph_weight},
        depth=s.channel_depth,
        half_life_days=0,
        recency_weight=0,
        salience_weight=0,
        default_k=10,
        max_k=200,
        collections=tuple(s.record_collections),
    )


async def measure(store_dir: Path, query_file: Path) -> dict[str, Any]:
    """Opens a store cold; search latency (no query embedding), ANN recall@10, memory."""
    payload = json.loads(query_file.read_text())  # noqa: ASYNC240 - once, before measuring
    texts: list[str] = payload["texts"]
    vectors = np.asarray(payload["vectors"], dtype=np.float32)
    before = rss_mib()
    store = await EmbeddedStore.open(store_dir, DIM)
    try:
        started = time.perf_counter()
        ann = store._indexes.index(TENANT, "chunks")  # loads the saved HNSW index, or rebuilds it
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        store._indexes.keyword(TENANT)  # opens the saved keyword index, or rebuilds it
        keyword_load_s = time.perf_counter() - started
        model = await store.get_meta(TENANT, MODEL_META) or ""
        table = dict(zip(texts, vectors, strict=True))
        searcher = Searcher(store, FixedEmbedder(table, model), _tuning())
        for text in texts[:20]:  # warm the page cache
            await searcher.search(Query(TENANT, text))
        latencies = [(await searcher.search(Query(TENANT, t))).search_ms for t in texts]
        steps = await breakdown(store, searcher, texts, vectors)
        hits = 0
        sample = vectors[:RECALL_QUERIES]
        for q in sample:
            approx = ann.index.search(q, 10)
            exact = ann.index.search(q, 10, exact=True)
            hits += len(set(map(int, approx.keys)) & set(map(int, exact.keys)))
        after = rss_mib()
        stats = await store.stats(TENANT)
        latencies.sort()
        return {
            "chunks": stats.chunks,
            "p50": statistics.median(latencies),
            "p99": latencies[int(0.99 * (len(latencies) - 1))],
            "recall": hits / (10 * len(sample)),
            "rss_delta": after - before,
            "ann_mib": ann.index.memory_usage / 2**20,
            "load_s": load_s,
            "keyword_load_s": keyword_load_s,
            "keyword_mib": sum(f.stat().st_size for f in (store_dir / "keyword").rglob("*"))
            / 2**20,
            "db_mib": (store_dir / "memex.db").stat().st_size / 2**20,
            "steps": steps,
            "model": model,
        }
    finally:
        await store.close()


def _sql(store: EmbeddedStore, sql: str, params: tuple[Any, ...]) -> list[Any]:
    return store._conn.execute(sql, params).fetchall()


def _pcts(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[int(0.99 * (len(values) - 1))]


async def breakdown(
    store: EmbeddedStore, searcher: Searcher, texts: list[str], vectors: NDArray[np.float32]
) -> dict[str, tuple[float, float]]:
    """p50/p99 ms of each step of a default search, each timed alone on the same queries:
    the channels as the Searcher calls them (default filter: no sensitive notes), their raw
    parts (HNSW alone, the keyword index's ranking alone), the FTS5 keyword channel the index
    replaced (and its ranking alone), graph expansion, and hydrating: every fused candidate
    with its text (before) against ranking them on metadata and fetching the top k's texts."""
    from memex.retrieval.fusion import rrf
    from memex.retrieval.store.embedded import keyword
    from memex.retrieval.store.embedded.schema import match_expression

    flt = searcher._filters(Query(TENANT, "x").filters)
    depth = searcher._t.depth
    ann = store._indexes.index(TENANT, "chunks")
    table = keyword.table(TENANT, "chunks")
    rank_only = (
        f"SELECT rowid, -bm25({table}) AS s FROM {table} WHERE {table} MATCH ? "
        "ORDER BY s DESC LIMIT ?"
    )
    words = store._indexes.keyword(TENANT)
    times: dict[str, list[float]] = {}

    def lap(name: str, started: float) -> float:
        now = time.perf_counter()
        times.setdefault(name, []).append((now - started) * 1000)
        return now

    for text, vector in zip(texts, vectors, strict=True):
        expression = match_expression(text) or '""'
        t = time.perf_counter()
        vec = await store.search_chunks_vector(TENANT, vector, depth, flt)
        t = lap("vector channel (HNSW + filter + ids)", t)
        await store._run(functools.partial(ann.search, vector, 4 * depth))
        t = lap("  HNSW alone, 4 x depth neighbours", t)
        kw = await store.search_chunks_keyword(TENANT, text, depth, flt)
        t = lap("keyword channel (index rank + filter + ids)", t)
        await store._run(functools.partial(words.search, text, 4 * depth + 1))
        t = lap("  keyword index ranking alone", t)
        conn = store._conn
        keyword_chunks = search_queries.keyword_chunks
        await store._run(functools.partial(keyword_chunks, conn, TENANT, text, depth, flt))
        t = lap("keyword channel on FTS5 (before)", t)
        await store._run(functools.partial(_sql, store, rank_only, (expression, 4 * depth + 1)))
        t = lap("  FTS5 ranking alone", t)
        found = {"vector": vec, "keyword": kw}
        await searcher._graph(Query(TENANT, text), vector, flt, found)
        t = lap("graph channel", t)
        fused, seen = rrf(found, searcher._t.weights, searcher._t.rrf_k)
        await store.get_chunks(TENANT, list(fused))
        t = lap("hydrate every fused candidate with texts (old)", t)
        ranked = await searcher.rank(TENANT, fused, seen)
        await searcher._hydrate(TENANT, ranked[: searcher._t.default_k])
        lap("rank candidates (metadata) + texts of the top k", t)
    return {name: _pcts(values) for name, values in times.items()}


async def build_big(source: Path, target: Path, corpus: list[str], total: int) -> float:
    """Builds the large store from the corpus store's vectors; returns seconds taken."""
    # Read-only, so this works while a retrieval service still holds the corpus store.
    conn = sqlite3.connect(f"file:{source / 'memex.db'}?mode=ro", uri=True)
    try:
        _, real = queries.all_vectors(conn, TENANT, "chunks", DIM)
    finally:
        conn.close()
    rng = np.random.default_rng(7)
    pick = random.Random(7)
    words = [re.findall(r"\w+", doc) for doc in corpus]
    started = time.perf_counter()
    store = await EmbeddedStore.open(target, DIM)
    try:
        for n in range(total // CHUNKS_PER_NOTE):
            rows = rng.integers(0, len(real), CHUNKS_PER_NOTE)
            noisy = real[rows] + NOISE * rng.standard_normal((CHUNKS_PER_NOTE, DIM)) / np.sqrt(DIM)
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            chunks = []
            for i in range(CHUNKS_PER_NOTE):
                a, b = words[int(rows[i]) % len(words)], pick.choice(words)
                text = " ".join(pick.choices(a or ["empty"], k=80) + pick.choices(b or ["x"], k=40))
                chunks.append(
                    Chunk(
                        id=f"s{n}-{i}",
                        note_id=f"s{n}",
                        ordinal=i,
                        text=text,
                        heading="",
                        start=0,
                        end=len(text),
                        search_text=text,
                        vector=noisy[i],
                    )
                )
            await store.upsert_note(
                TENANT,
                Note(
                    id=f"s{n}",
                    path=f"synthetic/{n}.md",
                    title=f"Synthetic {n}",
                    date="2024-01-01",
                    fingerprint=str(n),
                    chunks=tuple(chunks),
                ),
            )
            if n % 200 == 0:
                print(f"\r  building {n * CHUNKS_PER_NOTE}/{total}", end="", file=sys.stderr)
        print("", file=sys.stderr)
    finally:
        await store.close()
    return time.perf_counter() - started


def start(module: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A service process with its log in ``log``."""
    with log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", module],
            env={**os.environ, **env},
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


async def service_latency(store: Path, model: str, texts: Sequence[str], logs: Path) -> list[float]:
    """Server-side ``search_ms`` (sorted) of ``texts`` searched one at a time through a real
    retrieval service over ``store`` (default channels and k; the embedding service runs
    the model whose id is ``model``, the one the store was indexed with), after a few untimed
    searches."""
    eport, rport = free_port(), free_port()
    embedding = {"MEMEX_EMBEDDING_PORT": str(eport)}
    # The store records the model's id; the service is configured by its catalogue name.
    names = [name for name, entry in CATALOGUE.items() if entry.model_id == model]
    if names:  # else a store from before models were recorded: the default model
        embedding["MEMEX_EMBEDDING_MODEL"] = names[0]
    procs = [start("memex.embedding", embedding, logs / "embedding-scale.log")]
    try:
        await wait_until_serving(f"127.0.0.1:{eport}", timeout=180)
        env = {
            "MEMEX_RETRIEVAL_EMBEDDING_ADDR": f"127.0.0.1:{eport}",
            "MEMEX_RETRIEVAL_PORT": str(rport),
            "MEMEX_RETRIEVAL_STORE_DIR": str(store),
        }
        procs.append(start("memex.retrieval", env, logs / "retrieval-scale.log"))
        await wait_until_serving(f"127.0.0.1:{rport}", timeout=300)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{rport}") as channel:
            stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            timed = []
            for n, text in enumerate(texts[: SERVICE_WARMUP + SERVICE_QUERIES]):
                reply = await stub.Search(retrieval_pb2.SearchRequest(query=text), timeout=120)
                if n >= SERVICE_WARMUP:
                    timed.append(reply.search_ms)
            return sorted(timed)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


def _child(store: Path, query_file: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(store), str(query_file)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


async def scale_report(
    store: Path, vectors: list[list[float]], data: Any, big: int, work: Path
) -> None:
    """Prints latency, recall and memory at the corpus size and at ``big`` chunks."""
    query_file = work / "query-vectors.json"
    payload = {"texts": list(data.queries.values()), "vectors": vectors}
    query_file.write_text(json.dumps(payload))
    target = work / f"big-{big}"
    marker = target / "complete"
    if not marker.exists():
        corpus = [f"{title} {text}" for title, text in data.corpus.values()]
        seconds = await build_big(store, target, corpus, big)
        marker.write_text(f"{seconds:.0f}")
    build_s = float(marker.read_text())
    print("\nscale (in-process store + Searcher, vector+keyword+graph, k=10, no query embedding):")
    print(
        f"  {'chunks':>8}{'p50 ms':>9}{'p99 ms':>9}{'ANN recall@10':>15}{'RSS MiB':>9}"
        f"{'HNSW MiB':>10}{'SQLite MiB':>12}{'index load s':>14}"
    )
    rows = [_child(store, query_file), _child(target, query_file)]
    for r in rows:
        print(
            f"  {r['chunks']:>8}{r['p50']:>9.1f}{r['p99']:>9.1f}{r['recall']:>15.3f}"
            f"{r['rss_delta']:>9.0f}{r['ann_mib']:>10.0f}{r['db_mib']:>12.0f}{r['load_s']:>14.2f}"
        )
    print("\n  steps, each timed alone (p50 / p99 ms):")
    print(f"  {'step':<48}" + "".join(f"{r['chunks']:>18}" for r in rows))
    for name in rows[0]["steps"]:
        cells = "".join(f"{r['steps'][name][0]:>9.1f}{r['steps'][name][1]:>9.1f}" for r in rows)
        print(f"  {name:<48}{cells}")
    small, large = rows
    per = (large["rss_delta"] - small["rss_delta"]) / ((large["chunks"] - small["chunks"]) / 1e5)
    print(
        f"  resident memory per 100k chunks (store opened cold, searched): {per:.0f} MiB; "
        f"latency ratio {large['chunks'] // max(small['chunks'], 1)}x chunks -> "
        f"p50 x{large['p50'] / small['p50']:.1f}"
    )
    print(
        f"  the {big}-chunk set was built in {build_s:.0f}s "
        f"({big / max(build_s, 1e-9):.0f} chunks/s, vectors given, no embedding)"
    )
    print(
        f"\n  through the services (gRPC on loopback, {SERVICE_QUERIES} claims one at a time, "
        "default channels and k, server-side search_ms, query embedding excluded):"
    )
    (work / "logs").mkdir(exist_ok=True)
    claims = list(data.queries.values())
    for path, r in ((store, small), (target, large)):
        ms = await service_latency(path, r["model"], claims, work / "logs")
        print(
            f"  {r['chunks']:>8} chunks: p50 {statistics.median(ms):.1f} ms, "
            f"p99 {ms[int(0.99 * (len(ms) - 1))]:.1f} ms"
        )


def _build_only(source: Path, beir: Path, split: str, big: int, work: Path) -> None:
    from memex.retrieval.bench.beir import load

    data = load(beir, split)
    corpus = [f"{title} {text}" for title, text in data.corpus.values()]
    target = work / f"big-{big}"
    seconds = asyncio.run(build_big(source, target, corpus, big))
    (target / "complete").write_text(f"{seconds:.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--measure", nargs=2, type=Path, help="STORE QUERY_FILE: measure, print JSON"
    )
    parser.add_argument("--build", nargs=5, help="SOURCE BEIR SPLIT CHUNKS WORK: build the set")
    args = parser.parse_args()
    if args.build:
        src, beir, split, big, work = args.build
        _build_only(Path(src), Path(beir), split, int(big), Path(work))
    elif args.measure:
        print(json.dumps(asyncio.run(measure(*args.measure))))

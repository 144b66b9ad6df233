"""Retrieval quality and speed on the Weaviate backend, against the embedded store, in one run.

    python benchmarks/bench_retrieval.py --store weaviate --work DIR

Nothing is embedded again: the corpus store the embedded benchmark left in its work folder
(``DIR/store``, with every chunk's vector and keyword text) and its query vectors
(``DIR/query-vectors.json``) are the input. The notes are read from that store's SQLite file
(read-only) and written through ``WeaviateStore.upsert_note`` into a fresh single-node Weaviate
server on loopback (``WeaviateServer``: telemetry off, API key, its own temporary data
directory). Then every query runs through the service's ``Searcher`` (built by
``RetrievalCore`` from ``RetrievalSettings``, recency off as in the service benchmark) on both
stores: once per channel alone (vector, keyword, graph) and once fused, k=100, with the query
vectors precomputed, so the only difference between the two columns is the store. Last, search
latency: the first 300 queries one at a time, default channels and k, ``search_ms`` as the
service reports it (query embedding excluded), on each store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memex.retrieval.bench.beir import Beir, dedupe, ndcg_at, recall_at
from memex.retrieval.config import RetrievalSettings
from memex.retrieval.core import RetrievalCore
from memex.retrieval.embedder import MODEL_META
from memex.retrieval.search import Query
from memex.retrieval.store.base import Chunk, Note, Store
from memex.retrieval.store.embedded import EmbeddedStore
from memex.retrieval.store.embedded import keyword as fts
from memex.retrieval.store.weaviate import WeaviateStore
from memex.retrieval.store.weaviate_replication import ReplicationPolicy, WeaviateNode
from memex.retrieval.weaviate_server import WeaviateServer
from memex.testing.weaviate_cluster import WeaviateCluster

TENANT = "default"
CHANNELS = ("vector", "keyword", "graph")
PARALLEL = 4  # concurrent queries, as in the service benchmark
LOAD_PARALLEL = 8  # concurrent upsert_note calls while loading Weaviate
LATENCY_QUERIES = 300


class FixedEmbedder:
    """Returns precomputed query vectors, so both stores rank the very same vectors; it answers
    to the model that made them, so the search's model check passes."""

    def __init__(self, table: dict[str, NDArray[np.float32]], model_id: str) -> None:
        self._table = table
        self.model_id = model_id
        self.dimension = len(next(iter(table.values())))

    async def embed(self, texts: Sequence[str], kind: str) -> NDArray[np.float32]:
        """The stored vector of each text."""
        return np.stack([self._table[t] for t in texts])

    async def close(self) -> None:
        """Nothing to release."""


def cached_notes(store_dir: Path, dimension: int) -> list[Note]:
    """Every note of the default tenant of an embedded store, with its chunks' texts, keyword
    texts and vectors, read from its SQLite file without writing to it. BEIR notes have no
    links or mentions, so those are not read."""
    conn = sqlite3.connect(f"file:{store_dir / 'memex.db'}?mode=ro", uri=True)
    try:
        keys: dict[str, list[str]] = {}
        for key, note_id in conn.execute(
            "SELECT key, note_id FROM note_keys WHERE tenant = ?", (TENANT,)
        ):
            keys.setdefault(note_id, []).append(key)
        table = fts.table(TENANT, "chunks")  # a hash of the tenant, never its text
        chunks: dict[str, list[Chunk]] = {}
        rows = conn.execute(
            f'SELECT c.id, c.note_id, c.ordinal, c.text, c.heading, c.start, c."end", c.vector, '
            f"f.search_text FROM chunks c JOIN {table} f ON f.rowid = c.rowid "
            "WHERE c.tenant = ? ORDER BY c.note_id, c.ordinal",
            (TENANT,),
        )
        for cid, note_id, ordinal, text, heading, start, end, blob, search_text in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            assert vector.shape == (dimension,), "the store's vectors have another dimension"
            chunks.setdefault(note_id, []).append(
                Chunk(
                    id=cid,
                    note_id=note_id,
                    ordinal=ordinal,
                    text=text,
                    heading=heading,
                    start=start,
                    end=end,
                    search_text=search_text,
                    vector=vector,
                )
            )
        notes = []
        for row in conn.execute(
            "SELECT id, path, title, date, fingerprint, tags, record_keys, frontmatter, "
            "sensitive, salience FROM notes WHERE tenant = ? ORDER BY id",
            (TENANT,),
        ):
            notes.append(
                Note(
                    id=row[0],
                    path=row[1],
                    title=row[2],
                    date=row[3],
                    fingerprint=row[4],
                    tags=tuple(json.loads(row[5])),
                    keys=tuple(keys.get(row[0], ())),
                    record_keys=tuple(json.loads(row[6])),
                    frontmatter=json.loads(row[7]),
                    sensitive=bool(row[8]),
                    salience=float(row[9]),
                    chunks=tuple(chunks.get(row[0], ())),
                )
            )
        return notes
    finally:
        conn.close()


async def load(store: Store, notes: Sequence[Note]) -> float:
    """Writes every note through ``upsert_note``, a few at a time; returns seconds taken."""
    gate = asyncio.Semaphore(LOAD_PARALLEL)
    done = 0
    started = time.perf_counter()

    async def one(note: Note) -> None:
        nonlocal done
        async with gate:
            await store.upsert_note(TENANT, note)
            done += 1
            if done % 250 == 0:
                print(f"  loaded {done}/{len(notes)} notes", flush=True)

    await asyncio.gather(*(one(n) for n in notes))
    return time.perf_counter() - started


def _core(store: Store, embedder: FixedEmbedder) -> RetrievalCore:
    # The service's own wiring; recency off as the service benchmark sets it (BEIR notes carry
    # the indexing date, which says nothing about relevance).
    settings = RetrievalSettings(recency_half_life_days=0)
    return RetrievalCore(settings, store, embedder)


async def rankings(
    store: Store, embedder: FixedEmbedder, texts: dict[str, str], stems: dict[str, str]
) -> tuple[dict[str, dict[str, list[str]]], list[float]]:
    """Per channel (and "fused"), each query's document ranking at k=100; then the search
    latencies (ms) of the first queries, one at a time, default channels and k."""
    searcher = _core(store, embedder).searcher
    out: dict[str, dict[str, list[str]]] = {c: {} for c in (*CHANNELS, "fused")}
    gate = asyncio.Semaphore(PARALLEL)

    async def one(qid: str, text: str) -> None:
        async with gate:
            for channel in (*CHANNELS, "fused"):
                chosen = () if channel == "fused" else (channel,)
                result = await searcher.search(Query(TENANT, text, channels=chosen, k=100))
                docs = [stems[Path(i.path).stem] for i in result.items]
                out[channel][qid] = dedupe(docs)

    await asyncio.gather(*(one(qid, text) for qid, text in texts.items()))
    latencies = []
    for text in list(texts.values())[:LATENCY_QUERIES]:
        latencies.append((await searcher.search(Query(TENANT, text))).search_ms)
    return out, sorted(latencies)


def _scores(ranks: dict[str, list[str]], data: Beir) -> tuple[float, float]:
    qids = sorted(data.queries)
    return (
        statistics.fmean(ndcg_at(ranks.get(q, []), data.qrels[q]) for q in qids),
        statistics.fmean(recall_at(ranks.get(q, []), data.qrels[q]) for q in qids),
    )


def indexed_with(store_dir: Path) -> str:
    """The embedding model the cached corpus store was indexed with (the query vectors' too)."""
    conn = sqlite3.connect(f"file:{store_dir / 'memex.db'}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT value FROM meta WHERE tenant = ? AND key = ?", (TENANT, MODEL_META)
        ).fetchone()
    finally:
        conn.close()
    return str(row[0]) if row else ""


def weaviate_servers(root: Path, nodes: int, logs: Path) -> list[WeaviateServer]:
    """One server, or the nodes of a cluster (peers, one API key), not started."""
    if nodes == 1:
        return [WeaviateServer(root / "data", log_path=logs / "weaviate.log")]
    return WeaviateCluster(root, nodes).servers


async def weaviate_report(
    data: Beir, stems: dict[str, str], work: Path, nodes: int = 1
) -> dict[str, Any]:
    """Runs the comparison and prints it (on ``nodes`` Weaviate nodes, replication factor
    ``nodes``); returns the figures."""
    store_dir, query_file = work / "store", work / "query-vectors.json"
    if not (store_dir / "memex.db").exists() or not query_file.exists():
        raise SystemExit(
            f"{work} lacks store/ or query-vectors.json: run the embedded benchmark first "
            "(`python benchmarks/bench_retrieval.py` without --skip-scale writes both)"
        )
    payload = json.loads(query_file.read_text())
    table = {
        t: np.asarray(v, dtype=np.float32)
        for t, v in zip(payload["texts"], payload["vectors"], strict=True)
    }
    embedder = FixedEmbedder(table, indexed_with(store_dir))
    texts = {qid: text for qid, text in data.queries.items() if text in table}
    missing = len(data.queries) - len(texts)
    assert not missing, f"{missing} queries have no cached vector: wrong query-vectors.json?"
    notes = cached_notes(store_dir, embedder.dimension)
    chunks = sum(len(n.chunks) for n in notes)
    print(f"cached corpus store: {len(notes)} notes, {chunks} chunks; {len(texts)} queries")

    figures: dict[str, Any] = {}
    embedded = await EmbeddedStore.open(store_dir, embedder.dimension)
    try:
        figures["embedded"] = await rankings(embedded, embedder, texts, stems)
    finally:
        await embedded.close()

    with tempfile.TemporaryDirectory(prefix="memex-bench-weaviate-") as tmp:
        (work / "logs").mkdir(exist_ok=True)
        servers = weaviate_servers(Path(tmp), nodes, work / "logs")
        with contextlib.ExitStack() as running:
            for server in servers:
                running.callback(server.stop)
                server.start()
            for server in servers:
                server.wait_ready(180)
            first, *others = servers
            store = await WeaviateStore.connect(
                http_host=first.host,
                http_port=first.ports.http,
                grpc_port=first.ports.grpc,
                api_key=first.api_key,
                dimension=embedder.dimension,
                failover=[WeaviateNode(s.host, s.ports.http, s.ports.grpc) for s in others],
                # As `memex up --store weaviate --nodes N` runs it: every node holds a replica.
                policy=ReplicationPolicy(factor=nodes, read="QUORUM"),
            )
            try:
                seconds = await load(store, notes)
                stats = await store.stats(TENANT)
                print(
                    f"Weaviate loaded: {stats.notes} notes, {stats.chunks} chunks in "
                    f"{seconds:.0f}s ({stats.chunks / seconds:.1f} chunks/s through upsert_note, "
                    f"{LOAD_PARALLEL} at a time)"
                )
                assert (stats.notes, stats.chunks) == (len(notes), chunks), "load incomplete"
                figures["weaviate"] = await rankings(store, embedder, texts, stems)
            finally:
                await store.close()

    print("\nquality (documents ranked at their best chunk), embedded | Weaviate:")
    print(f"  {'channel':<10}{'nDCG@10':>18}{'Recall@100':>22}")
    for channel in (*CHANNELS, "fused"):
        e = _scores(figures["embedded"][0][channel], data)
        w = _scores(figures["weaviate"][0][channel], data)
        print(
            f"  {channel:<10}{e[0]:>9.4f} |{w[0]:>7.4f}  {w[0] - e[0]:+.4f}"
            f"{e[1]:>9.4f} |{w[1]:>7.4f}  {w[1] - e[1]:+.4f}"
        )
    for name in ("embedded", "weaviate"):
        lat = figures[name][1]
        print(
            f"  search latency, {name}: p50 {statistics.median(lat):.1f} ms, "
            f"p99 {lat[int(0.99 * (len(lat) - 1))]:.1f} ms ({len(lat)} queries one at a time, "
            "default channels, k=10, query embedding excluded)"
        )
    return figures

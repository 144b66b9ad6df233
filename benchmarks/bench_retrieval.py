"""Retrieval quality and speed on a BEIR folder, through the real services, in one run.

    make bench-retrieval        (or: python benchmarks/bench_retrieval.py --beir DIR --split test)

1. Quality. The corpus becomes a vault (one note per document), indexed by the retrieval service
   (its own process) through the embedding service (its own process), with IndexVault. Every
   query is searched once per channel alone (vector, keyword, graph) and once fused (the default
   channels), k=100; chunk rankings become document rankings at each document's best chunk.
   nDCG@10 and Recall@100 per channel and fused. Then an RRF sweep (k, keyword weight) over the
   same per-channel lists, fused by the service's own ``fusion.rrf``, with 2-fold cross-validation
    so the tuned figure is measured on queries it was not tuned on; then RRF against convex fusion
    of normalised scores (bench_fusion.fusion_study), each tuned the same way. The per-channel
    lists are saved in the work folder, where ``bench_fusion.py --rerank-model DIR`` reads them to
    measure a reranker on them without the services.
    The vault and the store are kept in the cache, one per embedder (``--embedder NAME``, a
    catalogue name; default the service's default model), so a rerun re-embeds nothing; indexing
    throughput is measured on a fresh store with a sample of the corpus in every run
    (``--sample-docs``, 0 skips it; the first full index's throughput is kept and shown too).
    ``--subset-queries Q --subset-docs D`` runs on a deterministic subset (``beir.subset``) when
    the full corpus takes too long to embed.
2. Scale (in-process, store level). Search latency without query embedding (Searcher.search with
   the query vectors precomputed by the embedding service), p50/p99, at the corpus size (~5k
   chunks) and at --big chunks (default 200k) built from it: each synthetic chunk's vector is a
   real chunk vector plus Gaussian noise (cosine ~0.9 to its source), and its text is 120 words
   drawn from two real documents. ANN recall@10 against exact search at both sizes. Resident
   memory growth per 100k chunks.

``--store weaviate`` runs neither part: it compares the Weaviate backend with the embedded one on
the corpus store and query vectors an embedded run left in ``--work`` (nothing is embedded
again); see bench_retrieval_weaviate.py. ``--nodes 3`` runs that comparison on a 3-node
cluster with replication factor 3 and QUORUM reads and writes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from bench_fusion import LISTS_FILE, fusion_study, passage_texts, save_lists
from bench_retrieval_scale import scale_report, start
from bench_retrieval_weaviate import weaviate_report

from memex.common.v1 import common_pb2
from memex.embedding.catalogue import CATALOGUE, DEFAULT_MODEL
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.retrieval.bench.beir import (
    Beir,
    dedupe,
    load,
    ndcg_at,
    recall_at,
    safe_name,
    subset,
    write_vault,
)
from memex.retrieval.fusion import FUSIONS, rrf
from memex.retrieval.store.base import Hit
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.health import wait_until_serving
from memex.shared.settings import default_cache_dir
from memex.testing import SHARED_DATA, free_port

SINGLE = {
    "vector": common_pb2.CHANNEL_VECTOR,
    "keyword": common_pb2.CHANNEL_KEYWORD,
    "graph": common_pb2.CHANNEL_GRAPH,
}
NAMES = {v: k for k, v in SINGLE.items()}
PARALLEL = 4
LATENCY_QUERIES = 300


def rss_mib(pid: int) -> float:
    """Resident memory of a process in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def index(stub: Any, vault: Path, tenant: str = "") -> retrieval_pb2.IndexSummary:
    """IndexVault to the end, with a one-line progress display."""
    summary = retrieval_pb2.IndexSummary()
    async for message in stub.IndexVault(
        retrieval_pb2.IndexVaultRequest(vault_path=str(vault), tenant=tenant), timeout=6 * 3600
    ):
        if message.HasField("summary"):
            summary = message.summary
        else:
            print(f"\r  indexing {message.done}/{message.total}", end="", file=sys.stderr)
    print("", file=sys.stderr)
    return summary


async def search_all(
    stub: Any, data: Beir, stems: dict[str, str], passages: dict[str, str]
) -> tuple[dict[str, dict[str, list[Hit]]], dict[str, list[str]], list[float], dict[str, str]]:
    """Per query: each single channel's chunk hits, the fused document ranking, the fused
    call's server-side search time, and chunk id -> doc id; fills ``passages`` (chunk id ->
    the text the service indexed)."""
    lists: dict[str, dict[str, list[Hit]]] = {}
    fused: dict[str, list[str]] = {}
    search_ms: list[float] = []
    chunk_doc: dict[str, str] = {}
    gate = asyncio.Semaphore(PARALLEL)

    async def one(qid: str, text: str) -> None:
        async with gate:
            lists[qid] = {}
            for name, channel in SINGLE.items():
                reply = await stub.Search(
                    retrieval_pb2.SearchRequest(query=text, channels=[channel], k=100)
                )
                passages.update(passage_texts(reply.items))
                hits = []
                for item in reply.items:
                    chunk_doc[item.id] = stems[Path(item.provenance.path).stem]
                    score = next(c.score for c in item.channel_scores if c.channel == channel)
                    hits.append(Hit(item.id, score))
                lists[qid][name] = hits
            reply = await stub.Search(retrieval_pb2.SearchRequest(query=text, k=100))
            fused[qid] = dedupe([stems[Path(i.provenance.path).stem] for i in reply.items])

    await asyncio.gather(*(one(qid, text) for qid, text in data.queries.items()))
    # Latency: one search at a time (the store serves requests in order), default k.
    for text in list(data.queries.values())[:LATENCY_QUERIES]:
        reply = await stub.Search(retrieval_pb2.SearchRequest(query=text))
        search_ms.append(reply.search_ms)
    return lists, fused, search_ms, chunk_doc


def evaluate(rankings: dict[str, list[str]], data: Beir, qids: list[str]) -> tuple[float, float]:
    """Mean nDCG@10 and Recall@100 over ``qids``."""
    ndcg = statistics.fmean(ndcg_at(rankings.get(q, []), data.qrels[q]) for q in qids)
    recall = statistics.fmean(recall_at(rankings.get(q, []), data.qrels[q]) for q in qids)
    return ndcg, recall


def fuse_offline(
    lists: dict[str, dict[str, list[Hit]]], chunk_doc: dict[str, str], k: float, kw: float
) -> dict[str, list[str]]:
    """Document rankings from the per-channel lists, fused by the service's rrf()."""
    out = {}
    for qid, channels in lists.items():
        scores, _ = rrf(channels, {"vector": 1.0, "keyword": kw, "graph": 1.0}, k)
        ranked = sorted(scores, key=lambda c: (-scores[c], c))
        out[qid] = dedupe([chunk_doc[c] for c in ranked])
    return out


def sweep(
    lists: dict[str, dict[str, list[Hit]]], chunk_doc: dict[str, str], data: Beir
) -> list[str]:
    """RRF grid on all queries, and 2-fold cross-validated best settings."""
    grid = [(k, kw) for k in (5, 10, 20, 30, 60, 100) for kw in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)]
    qids = sorted(data.queries)
    folds = [qids[0::2], qids[1::2]]
    rankings = {g: fuse_offline(lists, chunk_doc, *g) for g in grid}
    lines = [
        "RRF sweep (vector weight 1; nDCG@10 on all queries):",
        "      k " + "".join(f"  kw={kw:<5}" for kw in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)),
    ]
    for k in (5, 10, 20, 30, 60, 100):
        row = "".join(
            f"  {evaluate(rankings[(k, kw)], data, qids)[0]:.4f}  "
            for kw in (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
        )
        lines.append(f"  {k:>5} {row}")
    held_out = []
    for tune, test in (folds, folds[::-1]):
        best = max(grid, key=lambda g: evaluate(rankings[g], data, tune)[0])
        held_out.append((best, evaluate(rankings[best], data, test)[0], len(test)))
    cv = sum(score * n for _, score, n in held_out) / len(qids)
    lines.append(
        "2-fold CV: best on each half "
        + ", ".join(f"k={b[0]} kw={b[1]} -> {s:.4f} on the other half" for b, s, _ in held_out)
        + f"; held-out nDCG@10 {cv:.4f}"
    )
    return lines


async def quality(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Part 1; returns what part 2 needs (query vectors, store folder)."""
    data = load(args.beir, args.split)
    if args.subset_queries or args.subset_docs:
        data = subset(
            data, args.subset_queries or len(data.queries), args.subset_docs or len(data.corpus)
        )
    print(
        f"{args.beir.name}: {len(data.corpus)} documents, {len(data.queries)} queries "
        f"with qrels ({args.split}); embedder {args.embedder}"
    )
    vault, store = work / "vault", work / "store"
    stems = write_vault(data, vault)
    sample_vault = work / "sample-vault"
    write_vault(data, sample_vault, sorted(data.corpus)[: args.sample_docs])
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    eport, rport, sport = free_port(), free_port(), free_port()
    eaddr = f"127.0.0.1:{eport}"
    common = {
        "MEMEX_RETRIEVAL_EMBEDDING_ADDR": eaddr,
        "MEMEX_RETRIEVAL_RECENCY_HALF_LIFE_DAYS": "0",
        "MEMEX_RETRIEVAL_RRF_K": str(args.rrf_k),
        "MEMEX_RETRIEVAL_KEYWORD_WEIGHT": str(args.keyword_weight),
        "MEMEX_RETRIEVAL_FUSION": args.fusion,
    }
    procs = [
        start(
            "memex.embedding",
            {
                "MEMEX_EMBEDDING_PORT": str(eport),
                "MEMEX_EMBEDDING_MODEL": args.embedder,
            },
            logs / "embedding.log",
        )
    ]
    try:
        await wait_until_serving(eaddr, timeout=180)
        procs.append(
            start(
                "memex.retrieval",
                {
                    **common,
                    "MEMEX_RETRIEVAL_PORT": str(rport),
                    "MEMEX_RETRIEVAL_STORE_DIR": str(store),
                },
                logs / "retrieval.log",
            )
        )
        sample_store = work / f"sample-store-{os.getpid()}"
        procs.append(
            start(
                "memex.retrieval",
                {
                    **common,
                    "MEMEX_RETRIEVAL_PORT": str(sport),
                    "MEMEX_RETRIEVAL_STORE_DIR": str(sample_store),
                },
                logs / "retrieval-sample.log",
            )
        )
        for port in (rport, sport):
            await wait_until_serving(f"127.0.0.1:{port}", timeout=180)
        async with (
            grpc.aio.insecure_channel(f"127.0.0.1:{rport}") as rchan,
            grpc.aio.insecure_channel(f"127.0.0.1:{sport}") as schan,
            grpc.aio.insecure_channel(eaddr) as echan,
        ):
            stub = retrieval_pb2_grpc.RetrievalServiceStub(rchan)
            full = await index(stub, vault)
            sample = retrieval_pb2.IndexSummary()
            if args.sample_docs:
                sample = await index(retrieval_pb2_grpc.RetrievalServiceStub(schan), sample_vault)
            first = work / "first-index.json"
            if full.chunks_embedded:
                first.write_text(
                    json.dumps(
                        {
                            "chunks": full.chunks_embedded,
                            "seconds": full.seconds,
                            "embed_seconds": full.embed_seconds,
                        }
                    )
                )
            passages: dict[str, str] = {}
            lists, fused, search_ms, chunk_doc = await search_all(stub, data, stems, passages)
            estub = embedding_pb2_grpc.EmbeddingServiceStub(echan)
            qtexts = list(data.queries.values())
            qvecs: list[list[float]] = []
            for i in range(0, len(qtexts), 64):
                reply = await estub.Embed(
                    embedding_pb2.EmbedRequest(
                        texts=qtexts[i : i + 64], kind=embedding_pb2.EMBED_KIND_QUERY
                    )
                )
                qvecs += [list(e.values) for e in reply.embeddings]
            service_rss = rss_mib(procs[1].pid)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)
        shutil.rmtree(work / f"sample-store-{os.getpid()}", ignore_errors=True)

    qids = sorted(data.queries)
    print("\nquality (documents ranked at their best chunk):")
    print(f"  {'channel':<28}{'nDCG@10':>9}{'Recall@100':>12}")
    results = {}
    for name in SINGLE:
        ranks = {q: dedupe([chunk_doc[h.id] for h in lists[q][name]]) for q in qids}
        results[name] = evaluate(ranks, data, qids)
        print(f"  {name + ' alone':<28}{results[name][0]:>9.4f}{results[name][1]:>12.4f}")
    ndcg, recall = evaluate(fused, data, qids)
    best_name = max(SINGLE, key=lambda n: results[n][0])
    gain = ndcg - results[best_name][0]
    method = f"RRF k={args.rrf_k:g}" if args.fusion == "rrf" else args.fusion
    label = f"fused ({method}, kw={args.keyword_weight:g})"
    print(f"  {label:<28}{ndcg:>9.4f}{recall:>12.4f}")
    mark = "ok" if gain >= 0.02 else "MISS"
    print(f"  fused - best single ({best_name}): {gain:+.4f} nDCG@10 (target +0.02) {mark}")
    for line in sweep(lists, chunk_doc, data):
        print("  " + line)
    save_lists(work / LISTS_FILE, lists, chunk_doc, passages)
    for line in fusion_study(lists, chunk_doc, data):
        print("  " + line)

    print("\nindexing throughput:")
    for label, s in (("this run, fresh store, sample", sample), ("this run, cached corpus", full)):
        if label.endswith("sample") and not args.sample_docs:
            continue
        if s.chunks_embedded:
            print(
                f"  {label}: {s.added} notes, {s.chunks_embedded} chunks in {s.seconds:.1f}s = "
                f"{s.chunks_embedded / s.seconds:.1f} chunks/s; embedding "
                f"{100 * s.embed_seconds / s.seconds:.0f}% of the wall time spent waiting on it"
            )
        else:
            print(
                f"  {label}: {s.unchanged} notes unchanged, nothing re-embedded "
                f"({s.seconds:.2f}s to check)"
            )
    if (work / "first-index.json").exists():
        f = json.loads((work / "first-index.json").read_text())
        print(
            f"  first full index of the corpus: {f['chunks']} chunks in {f['seconds']:.0f}s = "
            f"{f['chunks'] / f['seconds']:.1f} chunks/s; embedding "
            f"{100 * f['embed_seconds'] / f['seconds']:.0f}% of the time"
        )
    search_ms.sort()
    print(
        f"  service search, one at a time ({LATENCY_QUERIES} queries, default channels, k=10, "
        "server side, query embedding excluded): "
        f"p50 {statistics.median(search_ms):.1f} ms, "
        f"p99 {search_ms[int(0.99 * (len(search_ms) - 1))]:.1f} ms; "
        f"retrieval process RSS {service_rss:.0f} MiB"
    )
    return {"store": store, "query_vectors": qvecs, "queries": qtexts, "data": data}


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--beir", type=Path, default=SHARED_DATA / "eval" / "scifact-train")
    parser.add_argument("--split", default="train")
    parser.add_argument("--big", type=int, default=200_000, help="chunks of the large set")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--rrf-k", type=float, default=None)
    parser.add_argument("--keyword-weight", type=float, default=None)
    parser.add_argument("--embedder", default=DEFAULT_MODEL, choices=sorted(CATALOGUE))
    parser.add_argument("--subset-queries", type=int, default=0, help="0: all queries")
    parser.add_argument("--subset-docs", type=int, default=0, help="0: the whole corpus")
    parser.add_argument(
        "--sample-docs", type=int, default=300, help="fresh-store indexing sample; 0 skips it"
    )
    parser.add_argument("--fusion", choices=FUSIONS, default=None, help="the service's fusion")
    parser.add_argument(
        "--store",
        choices=("embedded", "weaviate"),
        default="embedded",
        help="weaviate: compare the Weaviate backend with the embedded one on --work's cached "
        "store and query vectors (no embedding; the service's fusion settings)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="with --store weaviate: Weaviate nodes, each holding a replica (3: as `memex up "
        "--store weaviate --nodes 3` runs it)",
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="work folder (default: per BEIR name, embedder)"
    )
    args = parser.parse_args()
    if not args.beir.is_dir():
        print(f"skipped: {args.beir} is missing (the reference data beside the checkout)")
        return 0
    from memex.retrieval.config import RetrievalSettings

    defaults = RetrievalSettings()
    args.rrf_k = args.rrf_k if args.rrf_k is not None else defaults.rrf_k
    args.fusion = args.fusion or defaults.fusion
    if args.keyword_weight is None:
        args.keyword_weight = defaults.keyword_weight
    name = args.beir.name
    if args.subset_queries or args.subset_docs:
        name += f"-q{args.subset_queries}-d{args.subset_docs}"
    work = args.work or default_cache_dir() / "bench" / "retrieval" / name / args.embedder
    work.mkdir(parents=True, exist_ok=True)
    print(f"retrieval benchmark on {os.cpu_count()} CPUs; work folder {work}")
    started = time.perf_counter()
    if args.store == "weaviate":
        data = load(args.beir, args.split)
        if args.subset_queries or args.subset_docs:
            data = subset(
                data,
                args.subset_queries or len(data.queries),
                args.subset_docs or len(data.corpus),
            )
        await weaviate_report(data, {safe_name(d): d for d in data.corpus}, work, args.nodes)
        print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
        return 0
    state = await quality(args, work)
    if not args.skip_scale:
        await scale_report(state["store"], state["query_vectors"], state["data"], args.big, work)
    print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""Embedding throughput and latency: the service against in-process ONNX Runtime, in one run.

    make bench-embedding          (or: python benchmarks/bench_embedding.py --rounds 5)

Each round measures, in turn: the baseline (OnnxEmbedder.embed in this process, batches of 32),
the service over gRPC with the client sending batches of 32, and 32 concurrent clients sending one
text each (dynamic batching does the work). Rounds alternate so drift in a noisy machine's speed
hits all three alike; the ratios are of per-round figures, and medians are quoted. Then the p50 and
p99 latency of one short query on an idle service, and the service's resident memory.
The service runs as its own process, as deployed. Texts come from ../shared/eval/scifact-train.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path

import grpc

from memex.embedding.config import EmbeddingSettings
from memex.embedding.core import load_embedder
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.health import wait_until_serving
from memex.testing import SHARED_DATA, free_port

BATCH = 32
DOC_CHARS = 1600


def load_texts(corpus_dir: Path, count: int) -> tuple[list[str], list[str]]:
    """Short queries (SciFact claims) and documents cut to 1,600 characters at a word boundary."""
    queries = [json.loads(line)["text"] for line in (corpus_dir / "queries.jsonl").open()][:count]
    docs = []
    for line in (corpus_dir / "corpus.jsonl").open():
        record = json.loads(line)
        text = f"{record['title']}\n{record['text']}"
        if len(text) > DOC_CHARS:
            text = text[:DOC_CHARS].rsplit(" ", 1)[0]
        docs.append(text)
        if len(docs) == count:
            break
    return queries, docs


def rss_mib(pid: int) -> tuple[float, float]:
    """Resident memory now and at peak, in MiB."""
    fields = dict(
        line.split(":", 1)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def timed(run: Awaitable[None], texts: int) -> float:
    """Texts per second of one awaited run (created just before, so timing starts here)."""
    started = time.perf_counter()
    await run
    return texts / (time.perf_counter() - started)


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--texts", type=int, default=128, help="texts per measurement")
    parser.add_argument("--latency-samples", type=int, default=200)
    args = parser.parse_args()
    corpus = SHARED_DATA / "eval" / "scifact-train"
    if not corpus.is_dir():
        print(f"skipped: {corpus} is missing (the reference data beside the checkout)")
        return 0
    settings = EmbeddingSettings()  # the default catalogue model, as the service loads it
    queries, docs = load_texts(corpus, args.texts)
    embedder = load_embedder(settings)

    port = free_port()
    env = {
        **os.environ,
        "MEMEX_EMBEDDING_PORT": str(port),
        "MEMEX_EMBEDDING_MODEL": settings.model,
    }
    service = subprocess.Popen(  # noqa: ASYNC220 - once, before anything is measured
        [sys.executable, "-m", "memex.embedding"], env=env, stderr=subprocess.DEVNULL
    )
    address = f"127.0.0.1:{port}"
    try:
        await wait_until_serving(address, "memex.embedding.v1.EmbeddingService", timeout=120)
        async with grpc.aio.insecure_channel(address) as channel:
            stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
            await stub.Embed(embedding_pb2.EmbedRequest(texts=queries[:BATCH]))  # warm up

            async def baseline(texts: list[str]) -> None:
                for i in range(0, len(texts), BATCH):
                    await asyncio.to_thread(embedder.embed, texts[i : i + BATCH])

            async def batched(texts: list[str]) -> None:
                for i in range(0, len(texts), BATCH):
                    await stub.Embed(embedding_pb2.EmbedRequest(texts=texts[i : i + BATCH]))

            async def concurrent(texts: list[str]) -> None:
                queue = list(reversed(texts))

                async def client() -> None:
                    while queue:
                        await stub.Embed(embedding_pb2.EmbedRequest(texts=[queue.pop()]))

                await asyncio.gather(*(client() for _ in range(BATCH)))

            results: dict[str, dict[str, list[float]]] = {}
            for name, texts in (("short queries", queries), ("1,600-char documents", docs)):
                rows: dict[str, list[float]] = {"baseline": [], "batched": [], "concurrent": []}
                for _ in range(args.rounds):
                    for mode, run in (("baseline", baseline), ("batched", batched)):
                        rows[mode].append(await timed(run(texts), len(texts)))
                    rows["concurrent"].append(await timed(concurrent(texts), len(texts)))
                results[name] = rows

            latencies = []
            for i in range(args.latency_samples):
                started = time.perf_counter()
                await stub.Embed(
                    embedding_pb2.EmbedRequest(
                        texts=[queries[i % len(queries)]], kind=embedding_pb2.EMBED_KIND_QUERY
                    )
                )
                latencies.append((time.perf_counter() - started) * 1000)
        rss, peak = rss_mib(service.pid)
    finally:
        service.terminate()
        service.wait(30)

    print(
        f"embedding benchmark: {args.rounds} rounds of {args.texts} texts, batch {BATCH}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'texts':<22}{'figure':<34}{'median texts/s':>15}{'ratio (median)':>16}{'target':>8}")
    for name, rows in results.items():
        base = statistics.median(rows["baseline"])
        print(f"{name:<22}{'in-process ONNX Runtime (baseline)':<34}{base:>15.1f}{'1.00':>16}")
        for key, label, target in (
            ("batched", "service, batches of 32", 0.90),
            ("concurrent", "service, 32 clients x 1 text", 0.70),
        ):
            ratio = statistics.median(
                r / b for r, b in zip(rows[key], rows["baseline"], strict=True)
            )
            mark = "ok" if ratio >= target else "MISS"
            print(
                f"{'':<22}{label:<34}{statistics.median(rows[key]):>15.1f}"
                f"{ratio:>16.2f}{target:>6.2f} {mark}"
            )
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    print(f"one short query: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(latencies)} samples)")
    print(f"service resident memory: {rss:.0f} MiB now, {peak:.0f} MiB peak")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

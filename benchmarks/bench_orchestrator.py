"""memex's own overhead in ask and chat, with the model's time taken out.

    make bench-orchestrator      (or: python benchmarks/bench_orchestrator.py --requests 40)

The stack runs as deployed (`memex up`: embedding, retrieval, reasoner, orchestrator, worker, each
its own process, on free ports and a private data dir), the sample vault `demo/vault` indexed into
it, and the reasoner on its `stub` engine with a fixed delay per chunk (token), so the model's
share is known and small. For every ask and chat the client's end-to-end latency is measured and
the model's time is subtracted: the sum of that request's audited model-call latencies, which the
orchestrator records in its LLM log (`llm_log.latency_ms`, found by the request id the client
sends). What remains is memex's own work: planning's parse, retrieval (embedding the query, hybrid
search, fusion), policing, the audit and telemetry writes, gRPC hops. Reported at p50 and p99, at
concurrency 1 and 16, with the share of it taken by retrieval (the orchestrator's `retrieve` /
`chat_retrieve` stage time, from its Prometheus metrics, over the summed overhead).

Baseline, in the same run: one Search RPC straight to the retrieval service, the floor under any
ask. The stub's JSON answers carry no citations, so asks end abstaining; the stages run all the
same (plan, retrieve, synthesize, ground_check).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import grpc
from prometheus_client.parser import text_string_to_metric_families

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing.stack import private_stack_env

ROOT = Path(__file__).resolve().parents[1]
VAULT = ROOT / "demo" / "vault"
QUESTIONS = [
    "What does the allotment cost?",
    "When did I meet Ada?",
    "What did I sign up for in October?",
    "How was the September money check?",
    "What are my intentions for the year?",
    "Which books are on my reading list?",
    "What happened at the allotment AGM?",
    "How did the first week of the plan go?",
    "What did I think of The Design of Everyday Things?",
    "When were the site visits done?",
    "Why was I tired in February?",
    "What did I look back on in November?",
]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def cli(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


@contextlib.contextmanager
def stack(data_dir: Path, delay_ms: float) -> Iterator[dict[str, str]]:
    env = private_stack_env(
        data_dir,
        MEMEX_REASONER_ENGINE="stub",
        MEMEX_REASONER_STUB_DELAY_MS=str(delay_ms),
        MEMEX_LOG_LEVEL="WARNING",
        MEMEX_START_TIMEOUT_SECONDS="300",
    )
    for name in ("MEMEX_REASONER_MODEL_PATH", "MEMEX_REASONER_STUB_SCRIPT"):
        env.pop(name, None)
    cli(env, "up")
    try:
        yield env
    finally:
        cli(env, "down", timeout=120)


def stage_seconds(port: str) -> dict[str, float]:
    """The orchestrator's summed time per stage so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        families = text_string_to_metric_families(reply.read().decode())
    return {
        s.labels["stage"]: s.value
        for family in families
        for s in family.samples
        if s.name == "memex_orchestrator_stage_seconds_sum"
    }


def model_ms(state: Path, request_ids: list[str]) -> dict[str, float]:
    """Each request's summed model-call latency, as the orchestrator's LLM log has it."""
    with contextlib.closing(sqlite3.connect(state)) as db:
        marks = ",".join("?" * len(request_ids))
        rows = db.execute(
            f"SELECT request_id, SUM(latency_ms), COUNT(*) FROM llm_log "
            f"WHERE request_id IN ({marks}) GROUP BY request_id",
            request_ids,
        ).fetchall()
    return {rid: total for rid, total, _ in rows}


Request = Callable[[str, str], Awaitable[None]]


async def load(request: Request, concurrency: int, count: int) -> dict[str, float]:
    """Runs ``count`` requests ``concurrency`` at a time; each request id's latency in ms."""
    latencies: dict[str, float] = {}
    queue = list(range(count))

    async def client() -> None:
        while queue:
            i = queue.pop()
            rid = f"bench-{uuid.uuid4().hex[:12]}"
            started = time.perf_counter()
            await request(QUESTIONS[i % len(QUESTIONS)], rid)
            latencies[rid] = (time.perf_counter() - started) * 1000

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies


async def measure(env: dict[str, str], count: int) -> None:
    address = f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}"
    metrics_port = env["MEMEX_ORCHESTRATOR_METRICS_PORT"]
    state = Path(env["MEMEX_DATA_DIR"]) / "orchestrator" / "state.db"
    async with (
        grpc.aio.insecure_channel(address) as channel,
        grpc.aio.insecure_channel(f"127.0.0.1:{env['MEMEX_RETRIEVAL_PORT']}") as retrieval,
    ):
        stub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
        search = retrieval_pb2_grpc.RetrievalServiceStub(retrieval)

        async def ask(question: str, rid: str) -> None:
            await stub.Ask(pb.AskRequest(question=question), metadata=(("x-request-id", rid),))

        async def chat(question: str, rid: str) -> None:
            events = stub.Chat(pb.ChatRequest(message=question), metadata=(("x-request-id", rid),))
            last = None
            async for event in events:
                last = event
            if last is None or not last.HasField("done"):
                raise RuntimeError(f"chat did not finish: {last}")

        async def direct_search(question: str, rid: str) -> None:
            await search.Search(retrieval_pb2.SearchRequest(query=question, k=8))

        for request in (ask, chat, direct_search):  # warm every path once
            await load(request, 4, 8)

        baseline = list((await load(direct_search, 1, count)).values())
        print(
            f"baseline: retrieval Search RPC alone, concurrency 1: "
            f"p50 {statistics.median(baseline):.1f} ms, p99 {percentile(baseline, 0.99):.1f} ms"
        )
        print()
        header = (
            f"{'kind':<5} {'conc':>4} {'e2e p50':>8} {'model p50':>9} "
            f"{'overhead p50':>12} {'p99':>8} {'retrieval share':>15} {'p50 / search':>12}"
        )
        print(header)
        print("-" * len(header))
        for kind, request, stage in (("ask", ask, "retrieve"), ("chat", chat, "chat_retrieve")):
            for concurrency in (1, 16):
                n = count if concurrency == 1 else count * 4
                before = stage_seconds(metrics_port)
                latencies = await load(request, concurrency, n)
                after = stage_seconds(metrics_port)
                model = model_ms(state, list(latencies))
                overhead = [latencies[r] - model.get(r, 0.0) for r in latencies]
                retrieval_ms = (after.get(stage, 0) - before.get(stage, 0)) * 1000
                share = retrieval_ms / sum(overhead) if sum(overhead) > 0 else 0.0
                p50 = statistics.median(overhead)
                print(
                    f"{kind:<5} {concurrency:>4} {statistics.median(latencies.values()):>6.1f}ms "
                    f"{statistics.median(model.values()):>7.1f}ms {p50:>10.1f}ms "
                    f"{percentile(overhead, 0.99):>6.1f}ms {share:>15.0%} "
                    f"{p50 / statistics.median(baseline):>11.1f}x"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per run at conc. 1")
    parser.add_argument("--delay-ms", type=float, default=5.0, help="stub delay per token")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memex-bench-orch-") as tmp:
        data = Path(tmp) / "data"
        print(f"starting the stack (stub reasoner, {args.delay_ms:g} ms per token) in {data}")
        with stack(data, args.delay_ms) as env:
            indexed = cli(env, "index", str(VAULT))
            print(indexed.strip().splitlines()[-1] if indexed.strip() else "indexed")
            print(f"cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}")
            asyncio.run(measure(env, args.requests))


if __name__ == "__main__":
    main()

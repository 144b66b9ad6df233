"""The HTTP gateway's SSE overhead against the orchestrator's gRPC Chat stream, in one run.

    make bench-gateway          (or: python benchmarks/bench_gateway.py --rounds 40)

A private stack (real embedding model and retrieval over the demo vault; the reasoner's `stub`
engine replaying a script with a fixed per-token delay, so the model costs the same every time)
plus the gateway, as deployed, each its own process.

1. Latency: the same chat messages streamed through POST /v1/chat (httpx, async) and through the
   orchestrator's Chat RPC directly (grpc.aio), rounds alternating which goes first. Time to the
   first `delta` and the gap between consecutive deltas. Targets: at most 5 ms added to the first
   delta at p50, at most 1 ms added per event at p99.
2. Capacity: 200 concurrent SSE streams held open by the one gateway process (each one lasts
   several seconds, so all are open at once): errors, and the gateway's resident memory per
   stream (RSS at the peak minus RSS before, over 200).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
import httpx

from memex.cli.stack.supervisor import read_state
from memex.orchestrator.v1 import orchestrator_pb2, orchestrator_pb2_grpc
from memex.shared.stack_settings import StackSettings
from memex.testing import free_port
from memex.testing.stack import private_stack_env

if TYPE_CHECKING:  # the async stub type exists only in the generated .pyi
    from memex.orchestrator.v1.orchestrator_pb2_grpc import OrchestratorServiceAsyncStub

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "How much of my deposit did Graham agree to give back?",
    "Why did we cut the map view from Warden v1?",
    "What's my allotment plot number and what does it cost?",
    "What was my half marathon time?",
    "Who is Chi?",
    "How much did the move cost?",
    "When did the deposit actually come back?",
    "How did the long run after the shin splints go?",
]
HOLD = "HOLD-THE-LINE"  # the scripted reply for this marker streams slowly, holding streams open
TOKENS = 40


@dataclass
class Trace:
    """When each event of one stream arrived, in seconds after the request was sent."""

    events: list[tuple[str, float]] = field(default_factory=list)

    @property
    def first_delta(self) -> float:
        return next(t for kind, t in self.events if kind == "delta")

    @property
    def gaps(self) -> list[float]:
        deltas = [t for kind, t in self.events if kind == "delta"]
        return [b - a for a, b in itertools.pairwise(deltas)]

    @property
    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


def script(path: Path, delay_ms: float, hold_delay_ms: float) -> Path:
    """The stub's replies: TOKENS chunks and an empty citation list, at a fixed pace."""
    reply = [f"word{i} " for i in range(TOKENS)] + ["\n@@CITATIONS@@\n", "[]"]
    held = [f"slow{i} " for i in range(TOKENS)] + ["\n@@CITATIONS@@\n", "[]"]
    path.write_text(
        json.dumps(
            {
                "responses": [
                    {"match": HOLD, "chunks": held, "delay_ms": hold_delay_ms},
                    {"chunks": reply, "delay_ms": delay_ms},
                ]
            }
        )
    )
    return path


def memex(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def direct(stub: OrchestratorServiceAsyncStub, message: str) -> Trace:
    trace = Trace()
    start = time.perf_counter()
    async for event in stub.Chat(orchestrator_pb2.ChatRequest(message=message)):
        trace.events.append((event.WhichOneof("event") or "", time.perf_counter() - start))
    return trace


async def sse_events(response: httpx.Response) -> AsyncIterator[str]:
    """Event names of an SSE response as each arrives (comments skipped)."""
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line == "" and name:
            yield name
            name = ""


async def through_gateway(client: httpx.AsyncClient, message: str) -> Trace:
    trace = Trace()
    start = time.perf_counter()
    async with client.stream("POST", "/v1/chat", json={"message": message}) as response:
        if response.status_code != 200:
            body = (await response.aread()).decode()
            raise RuntimeError(f"HTTP {response.status_code}: {body}")
        async for name in sse_events(response):
            trace.events.append((name, time.perf_counter() - start))
    return trace


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f} ms"


async def latency(base_url: str, orchestrator: str, rounds: int) -> dict[str, float]:
    ttfd: dict[str, list[float]] = {"direct": [], "gateway": []}
    gaps: dict[str, list[float]] = {"direct": [], "gateway": []}
    async with (
        grpc.aio.insecure_channel(orchestrator) as channel,
        httpx.AsyncClient(base_url=base_url, timeout=60) as client,
    ):
        stub: OrchestratorServiceAsyncStub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
        for warm in QUESTIONS[:2]:  # connections, model sessions, caches
            await direct(stub, warm)
            await through_gateway(client, warm)
        for i in range(rounds):
            message = QUESTIONS[i % len(QUESTIONS)]
            order = ["direct", "gateway"] if i % 2 == 0 else ["gateway", "direct"]
            for path in order:
                trace = (
                    await direct(stub, message)
                    if path == "direct"
                    else await through_gateway(client, message)
                )
                if trace.kinds[0] != "meta" or trace.kinds[-1] != "done":
                    raise RuntimeError(f"{path}: unexpected events {trace.kinds}")
                ttfd[path].append(trace.first_delta)
                gaps[path].extend(trace.gaps)
    d50, g50 = statistics.median(ttfd["direct"]), statistics.median(ttfd["gateway"])
    # Each round asks both paths the same question one after the other: the median of the
    # per-round differences cancels slow drift of a noisy machine better than two medians do.
    paired = statistics.median(g - d for d, g in zip(ttfd["direct"], ttfd["gateway"], strict=True))
    d99, g99 = pct(gaps["direct"], 0.99), pct(gaps["gateway"], 0.99)
    print(f"\n1. Latency, {rounds} rounds of each, {TOKENS} deltas per reply")
    print(f"   first delta p50   direct {ms(d50)}   gateway {ms(g50)}   added {ms(g50 - d50)}")
    print(f"                     median of per-round differences {ms(paired)}")
    print(f"                     ratio gateway/direct {g50 / d50:.3f}   (target: added ≤ 5 ms)")
    for q in (0.5, 0.99):
        d, g = pct(gaps["direct"], q), pct(gaps["gateway"], q)
        label = f"p{round(q * 100)}"
        print(f"   delta gap {label:<7} direct {ms(d)}   gateway {ms(g)}   added {ms(g - d)}")
    print("                     (target: added ≤ 1 ms per event at p99)")
    return {
        "ttfd_direct_p50_ms": d50 * 1000,
        "ttfd_gateway_p50_ms": g50 * 1000,
        "ttfd_added_paired_p50_ms": paired * 1000,
        "gap_direct_p50_ms": pct(gaps["direct"], 0.5) * 1000,
        "gap_gateway_p50_ms": pct(gaps["gateway"], 0.5) * 1000,
        "gap_direct_p99_ms": d99 * 1000,
        "gap_gateway_p99_ms": g99 * 1000,
    }


async def capacity(base_url: str, gateway_pid: int, streams: int) -> dict[str, float]:
    limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
    open_now = 0
    most_open = 0
    peak = before = rss_kib(gateway_pid)
    errors: list[str] = []
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_kib(gateway_pid))
            await asyncio.sleep(0.05)

    async def one(client: httpx.AsyncClient, i: int) -> None:
        nonlocal open_now, most_open
        opened = False
        try:
            message = f"{HOLD} {QUESTIONS[i % len(QUESTIONS)]}"
            async with client.stream("POST", "/v1/chat", json={"message": message}) as response:
                if response.status_code != 200:
                    body = (await response.aread())[:200]
                    errors.append(f"HTTP {response.status_code}: {body!r}")
                    return
                kinds = []
                async for name in sse_events(response):
                    kinds.append(name)
                    if name == "delta" and not opened:
                        opened = True
                        open_now += 1
                        most_open = max(most_open, open_now)
                if kinds[-1:] != ["done"]:
                    errors.append(f"stream {i} ended with {kinds[-1:]}")
        except Exception as exc:  # counted and shown, not raised: the point is how many fail
            errors.append(f"stream {i}: {exc!r}")
        finally:
            if opened:
                open_now -= 1

    sampler = asyncio.create_task(sample())
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as client:
        await asyncio.gather(*(one(client, i) for i in range(streams)))
    took = time.perf_counter() - start
    stop.set()
    await sampler
    per_stream = (peak - before) / streams
    print(f"\n2. {streams} concurrent SSE streams through one gateway process ({took:.1f} s)")
    print(f"   errors {len(errors)}   most open at once {most_open}")
    print(
        f"   gateway RSS before {before / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, "
        f"per stream {per_stream:.1f} KiB"
    )
    for error in errors[:5]:
        print(f"   {error}")
    return {
        "errors": len(errors),
        "most_open": most_open,
        "rss_before_mib": before / 1024,
        "rss_peak_mib": peak / 1024,
        "kib_per_stream": per_stream,
    }


def start_gateway(
    env: dict[str, str], settings: StackSettings
) -> tuple[int, int, subprocess.Popen[bytes] | None]:
    """The stack's gateway (pid, port) when `memex up` runs one; else one started here."""
    state = read_state(settings) or {}
    running = state.get("services", {}).get("gateway")
    if running and running.get("pid"):
        return int(running["pid"]), int(env["MEMEX_GATEWAY_PORT"]), None
    port = free_port()
    gateway_env = {
        **env,
        "MEMEX_GATEWAY_PORT": str(port),
        "MEMEX_GATEWAY_ORCHESTRATOR_ADDR": settings.orchestrator_addr,
        "MEMEX_GATEWAY_RETRIEVAL_ADDR": settings.retrieval_addr,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "memex.gateway"], env=gateway_env, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process.pid, port, process
        except httpx.TransportError:
            time.sleep(0.3)
    process.terminate()
    raise SystemExit("the gateway did not come up within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=10.0, help="stub pace per token")
    parser.add_argument("--hold-delay-ms", type=float, default=150.0, help="pace when holding")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memex-bench-gateway-") as tmp:
        data = Path(tmp) / "data"
        env = private_stack_env(
            data,
            MEMEX_REASONER_ENGINE="stub",
            MEMEX_REASONER_STUB_SCRIPT=str(
                script(Path(tmp) / "stub.json", args.delay_ms, args.hold_delay_ms)
            ),
            MEMEX_REASONER_MAX_ACTIVE="256",
            MEMEX_REASONER_MAX_QUEUE="256",
            MEMEX_GATEWAY_RATE_LIMIT_PER_MINUTE="0",  # a benchmark, not an abuser
            MEMEX_GATEWAY_LOG_LEVEL="WARNING",
            MEMEX_START_TIMEOUT_SECONDS="180",
        )
        os.environ.update({k: v for k, v in env.items() if k.startswith("MEMEX_")})
        settings = StackSettings()
        print(f"stack in {data}; stub reasoner, {args.delay_ms:g} ms per token")
        memex(env, "up")
        process = None
        try:
            memex(env, "index", str(ROOT / "demo" / "vault"))
            pid, port, process = start_gateway(env, settings)
            base = f"http://127.0.0.1:{port}"
            figures = asyncio.run(latency(base, settings.orchestrator_addr, args.rounds))
            figures |= asyncio.run(capacity(base, pid, args.streams))
            if args.json:
                args.json.write_text(json.dumps(figures, indent=2))
        finally:
            if process is not None:
                process.terminate()
                process.wait(30)
            memex(env, "down", timeout=90)


if __name__ == "__main__":
    main()

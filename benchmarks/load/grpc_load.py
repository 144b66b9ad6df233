"""gRPC load on each stage with ghz (`make ghz` builds it with Go, cached by version).

ghz reads each service's schema from its .proto under protos/ (Python's reflection server cannot
look a method's symbol up, which is what ghz asks it). One call per stage, the one a user's
request spends most time in: embedding's Embed, retrieval's Search, the reasoner's streamed
Generate (on the stub engine) and the orchestrator's Search (retrieval behind its policy).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GHZ_VERSION = "v0.120.0"
PROTOS = Path(__file__).resolve().parents[2] / "protos"

# (stage, address setting, fully-qualified method, request as JSON)
CALLS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    (
        "embedding",
        "MEMEX_EMBEDDING_PORT",
        "memex.embedding.v1.EmbeddingService/Embed",
        {"texts": ["How much of my deposit did Graham give back?"]},
    ),
    (
        "retrieval",
        "MEMEX_RETRIEVAL_PORT",
        "memex.retrieval.v1.RetrievalService/Search",
        {"query": "allotment tenancy rent", "k": 8},
    ),
    (
        "reasoner",
        "MEMEX_REASONER_PORT",
        "memex.reasoner.v1.ReasonerService/Generate",
        {"messages": [{"role": "ROLE_USER", "content": "Say hello."}]},
    ),
    (
        "orchestrator",
        "MEMEX_ORCHESTRATOR_PORT",
        "memex.orchestrator.v1.OrchestratorService/Search",
        {"query": "boiler repair", "k": 8},
    ),
)


@dataclass(frozen=True)
class GrpcResult:
    """One stage's ghz run."""

    stage: str
    method: str
    count: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    statuses: dict[str, int]


def ghz_binary() -> Path | None:
    """The ghz `make ghz` built (in the memex cache), or one on PATH."""
    cache = Path(os.environ.get("MEMEX_CACHE_DIR", Path.home() / ".cache" / "memex"))
    built = cache / "bin" / f"ghz-{GHZ_VERSION}"
    if built.exists():
        return built
    found = shutil.which("ghz")
    return Path(found) if found else None


def run_stage(
    ghz: Path, env: dict[str, str], stage: tuple[str, str, str, dict[str, Any]], seconds: int
) -> GrpcResult:
    """ghz against one stage for ``seconds`` at 4 concurrent calls."""
    name, port_setting, method, request = stage
    package = method.split("/")[0].rsplit(".", 1)[0]  # memex.embedding.v1
    proto = Path(*package.split(".")) / f"{package.split('.')[1]}.proto"
    command = [str(ghz), "--insecure", "--import-paths", str(PROTOS), "--proto", str(proto)]
    command += ["--call", method, "--data", json.dumps(request)]
    command += ["--concurrency", "4", "--duration", f"{seconds}s", "--format", "json"]
    # wait: calls in flight when the time is up finish and count, rather than being cut off
    # and reported as failures of the stage.
    command += ["--duration-stop", "wait", "--total", "0", f"127.0.0.1:{env[port_setting]}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"ghz against {name} failed ({done.returncode}): {done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout)
    latency = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    return GrpcResult(
        stage=name,
        method=method.rsplit(".", 1)[-1],
        count=int(report["count"]),
        rps=float(report["rps"]),
        p50_ms=latency.get(50, float("nan")),
        p95_ms=latency.get(95, float("nan")),
        p99_ms=latency.get(99, float("nan")),
        statuses={str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()},
    )


def grpc_section(results: list[GrpcResult], seconds: int) -> list[str]:
    """The report's section: each stage's throughput, latency and statuses under ghz."""
    lines = [
        "## gRPC, each stage alone (ghz)",
        "",
        f"ghz {GHZ_VERSION} (schemas from protos/), 4 concurrent calls for {seconds} s per "
        "stage, straight to the stage's port (no gateway); the reasoner is the stub engine, so "
        "its row is memex's streaming path, not a model.",
        "",
        "| stage | call | calls | calls/s | p50 ms | p95 ms | p99 ms | statuses |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(r.statuses.items()))
        lines.append(
            f"| {r.stage} | `{r.method}` | {r.count} | {r.rps:.1f} | {r.p50_ms:.1f} | "
            f"{r.p95_ms:.1f} | {r.p99_ms:.1f} | {statuses} |"
        )
    return [*lines, ""]

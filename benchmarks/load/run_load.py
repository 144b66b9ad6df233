"""HTTP and SSE load on a real private stack with locust; the report goes to docs/load.md.

    make load                                   (or: python benchmarks/load/run_load.py)
    python benchmarks/load/run_load.py --users 10 --duration 60
    python benchmarks/load/run_load.py --saturate           (users 2, 4, ... 64, 20 s a step)
    python benchmarks/load/run_load.py --real-model         (adds 1 user on the real model)

A private stack on free ports (`memex up`, the demo vault indexed, `memex down` at the end
whatever happens) with the reasoner on its `stub` engine replaying ``stub_script.json`` at a
model's pace (a plan, and cited answers, one token per ``delay_ms``), so the load measures memex
and not the model. The gateway's per-caller rate limit is off unless ``--rate-limit`` sets one:
every simulated user calls from 127.0.0.1, so the limit would measure itself.

locust runs headless in a subprocess (it monkey-patches the standard library with gevent) with
``benchmarks/load/locustfile.py``; meanwhile every stack process (the pids in
``<data_dir>/run/stack.json`` and their children) is sampled each second for CPU% and RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psutil

from memex.cli.observe import SCRAPE_INTERVAL
from memex.reasoner.catalogue import DEFAULT_MODEL
from memex.testing.stack import private_stack_env

HERE = Path(__file__).resolve().parent
# Run as a script, this folder is on the path but its package (load) is not: add benchmarks/.
sys.path.insert(0, str(HERE.parent))
from load.grpc_load import CALLS, ghz_binary, grpc_section, run_stage  # noqa: E402

REPO = HERE.parents[1]
LOCUSTFILE = HERE / "locustfile.py"
STUB_SCRIPT = HERE / "stub_script.json"
DEMO_VAULT = REPO / "demo" / "vault"
CLI = [sys.executable, "-m", "memex.cli"]
SCRAPE_SECONDS = int(SCRAPE_INTERVAL.removesuffix("s"))
SATURATION_STEPS = (2, 4, 8, 16, 32, 64, 128, 256)
# The one locust entry summing every request; never a row of the mix.
AGGREGATED = "Aggregated"
TURN_ROW = "turn: queued -> answered"
# locust's own process: sampled and shown, but not part of the stack's totals.
LOAD_GENERATOR = "(locust, the load generator)"


# --- the stack ----------------------------------------------------------------------------------


def memex(env: dict[str, str], *args: str, timeout: float = 600) -> None:
    """Runs the `memex` CLI against the private stack; exits with its output when it fails."""
    result = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")


def stack_env(data_dir: Path, *, stub: bool, rate_limit: float) -> dict[str, str]:
    """A private stack's environment: the stub reasoner (or the default real model)."""
    extra = {
        "MEMEX_LOG_LEVEL": "WARNING",
        "MEMEX_START_TIMEOUT_SECONDS": "300",
        "MEMEX_GATEWAY_RATE_LIMIT_PER_MINUTE": f"{rate_limit:g}",
    }
    if stub:
        extra |= {
            "MEMEX_REASONER_ENGINE": "stub",
            "MEMEX_REASONER_STUB_SCRIPT": str(STUB_SCRIPT),
        }
    env = private_stack_env(data_dir, **extra)
    if stub:
        # The stub refuses to start beside a configured real model (a shell may set one).
        env.pop("MEMEX_REASONER_MODEL_PATH", None)
    else:
        for name in ("MEMEX_REASONER_ENGINE", "MEMEX_REASONER_STUB_SCRIPT"):
            env.pop(name, None)
    return env


@contextlib.contextmanager
def running_stack(env: dict[str, str]) -> Iterator[str]:
    """`memex up` and the demo vault indexed; yields the gateway URL; `memex down` always."""
    try:
        memex(env, "up")
        memex(env, "index", str(DEMO_VAULT))
        yield f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}"
    finally:
        subprocess.run([*CLI, "down"], env=env, capture_output=True, timeout=120, check=False)


# --- processes ----------------------------------------------------------------------------------


@dataclass
class ProcessSamples:
    """One stack process's CPU% and RSS, a sample a second."""

    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)


def stack_processes(data_dir: Path) -> dict[str, psutil.Process]:
    """Every process of the stack by name: each service, the supervisor, and any process one of
    them started (named ``service/child[pid]``)."""
    state = json.loads((data_dir / "run" / "stack.json").read_text())
    roots = {name: int(s["pid"]) for name, s in state["services"].items() if s.get("pid")}
    roots["supervisor"] = int(state["pid"])  # last: its children are the services above
    found: dict[str, psutil.Process] = {}
    for name, pid in roots.items():
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            found[name] = process
            for child in process.children(recursive=True):
                if child.pid not in roots.values():
                    found.setdefault(f"{name}/{child.name()}[{child.pid}]", child)
    return found


class Sampler:
    """Samples the stack's processes each second while a run lasts."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._processes: dict[str, psutil.Process] = {}
        self.samples: dict[str, ProcessSamples] = {}

    def prime(self) -> None:
        """Finds the processes and starts their CPU counters (the first reading is 0)."""
        self._processes = stack_processes(self._data_dir)
        for process in self._processes.values():
            with contextlib.suppress(psutil.Error):
                process.cpu_percent(None)

    def add(self, name: str, pid: int) -> None:
        """Samples one more process too (the load generator, which shares the machine)."""
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            process.cpu_percent(None)
            self._processes[name] = process

    def sample(self, *, cpu: bool = True) -> None:
        """One reading of every process (CPU% since the last reading, RSS now)."""
        for name, process in self._processes.items():
            with contextlib.suppress(psutil.Error):
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue  # exited (locust at the end of its run): no reading, not a 0
                got = self.samples.setdefault(name, ProcessSamples())
                if cpu:
                    got.cpu.append(process.cpu_percent(None))
                got.rss_mb.append(process.memory_info().rss / 2**20)


# --- locust -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One row of locust's statistics (times in ms)."""

    name: str
    kind: str
    requests: int
    failures: int
    rps: float
    p50: float
    p95: float
    p99: float


def derived(name: str) -> bool:
    """Whether a row re-times requests another row counts: a stream's first event, a queued
    turn's whole wait. Request totals leave them out, so nothing counts twice."""
    return name.endswith(("(first event)", "(first words)")) or name.startswith("turn:")


@dataclass
class RunResult:
    """One locust run: its rows, its failures by status, the processes' samples."""

    users: int
    seconds: float
    endpoints: list[Endpoint]
    failures: dict[str, int]
    processes: dict[str, ProcessSamples]

    @property
    def rows(self) -> list[Endpoint]:
        """The mix's rows, without locust's aggregate."""
        return [e for e in self.endpoints if e.name != AGGREGATED]

    @property
    def requests(self) -> list[Endpoint]:
        """The rows of HTTP requests (derived timings left out)."""
        return [e for e in self.rows if not derived(e.name)]

    @property
    def outcomes(self) -> list[Endpoint]:
        """The rows that can fail: HTTP requests, and queued turns as a whole (a turn that was
        never answered fails there, and only there; a stream's first event never fails)."""
        return [e for e in self.rows if not e.name.endswith(("(first event)", "(first words)"))]

    def rps(self) -> float:
        """HTTP requests a second, every endpoint together."""
        return sum(e.rps for e in self.requests)

    def error_ratio(self) -> float:
        """Failed requests and turns over all of them."""
        total = sum(e.requests for e in self.outcomes)
        return sum(e.failures for e in self.outcomes) / total if total else 0.0

    def worst_p99(self) -> Endpoint:
        """The HTTP request row with the highest p99. A queued turn's whole wait is left out:
        turns are answered one at a time by design, so their wait is the queue's length."""
        return max(self.requests, key=lambda e: e.p99)

    def row(self, name: str) -> Endpoint | None:
        """The row of one endpoint, if it ran."""
        return next((e for e in self.rows if e.name == name), None)


def _number(text: str) -> float:
    return float(text) if text not in ("", "N/A") else 0.0


def read_stats(prefix: Path) -> tuple[list[Endpoint], dict[str, int]]:
    """locust's ``_stats.csv`` rows and its ``_failures.csv`` counted by status."""
    endpoints = []
    with open(f"{prefix}_stats.csv", newline="") as f:
        for row in csv.DictReader(f):
            endpoints.append(
                Endpoint(
                    name=row["Name"],
                    kind=row["Type"],
                    requests=int(row["Request Count"]),
                    failures=int(row["Failure Count"]),
                    rps=_number(row["Requests/s"]),
                    p50=_number(row["50%"]),
                    p95=_number(row["95%"]),
                    p99=_number(row["99%"]),
                )
            )
    failures: dict[str, int] = {}
    with open(f"{prefix}_failures.csv", newline="") as f:
        for row in csv.DictReader(f):
            status = failure_status(row["Error"])
            failures[status] = failures.get(status, 0) + int(row["Occurrences"])
    return endpoints, failures


def failure_status(error: str) -> str:
    """The status a locust failure names: ``HTTP 429``, ``SSE UNAVAILABLE``, ``timeout``, ...

    The locustfile's failures read ``StreamFailure('HTTP 503')`` or
    ``CatchResponseError('HTTP 429')``; anything else is named by its exception's class.
    """
    ours = re.fullmatch(r"(?:StreamFailure|CatchResponseError)\((['\"])(.*)\1\)", error.strip())
    if ours:
        return ours.group(2)
    return error.split("(", 1)[0].strip() or "unknown"


def run_locust(
    url: str, data_dir: Path, out_dir: Path, users: int, seconds: int, tag: str
) -> RunResult:
    """One headless locust run of ``users`` for ``seconds``, the stack sampled meanwhile."""
    prefix = out_dir / tag
    spawn_rate = max(1, users // 4)
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "--only-summary",
        "-u",
        str(users),
        "-r",
        str(spawn_rate),
        "-t",
        f"{seconds}s",
        "--stop-timeout",
        "30",
        "--csv",
        str(prefix),
        "--exit-code-on-error",
        "0",
        "--host",
        url,
    ]
    sampler = Sampler(data_dir)
    sampler.prime()
    sampler.sample(cpu=False)  # RSS at the start
    log = (out_dir / f"{tag}.log").open("w")
    with log, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT) as locust:
        sampler.add(LOAD_GENERATOR, locust.pid)
        while locust.poll() is None:
            time.sleep(1)
            sampler.sample()
    if locust.returncode != 0:
        raise SystemExit(f"locust failed ({locust.returncode}); see {out_dir / f'{tag}.log'}")
    endpoints, failures = read_stats(prefix)
    return RunResult(users, seconds, endpoints, failures, sampler.samples)


# --- the report ---------------------------------------------------------------------------------


def ms(value: float) -> str:
    """Milliseconds as the report shows them."""
    return f"{value:,.0f}"


def endpoint_table(result: RunResult) -> list[str]:
    """Per endpoint: requests, failures, throughput and percentiles."""
    lines = [
        "| endpoint | requests | failures | req/s | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for e in sorted(result.rows, key=lambda e: e.name):
        name = f"`{e.name}`" + (" *" if derived(e.name) else "")
        lines.append(
            f"| {name} | {e.requests} | {e.failures} | {e.rps:.2f} | {ms(e.p50)} | {ms(e.p95)} "
            f"| {ms(e.p99)} |"
        )
    total = sum(e.requests for e in result.requests)
    failed = sum(e.failures for e in result.requests)

    lines.append(f"| **all HTTP requests** | {total} | {failed} | {result.rps():.2f} | | | |")
    return lines


def failures_line(failures: dict[str, int]) -> str:
    """Failures by status, largest first."""
    if not failures:
        return "none"
    ordered = sorted(failures.items(), key=lambda item: -item[1])
    return ", ".join(f"{status}: {count}" for status, count in ordered)


def process_table(result: RunResult) -> list[str]:
    """Per process: mean and peak CPU%, RSS at the start, peak and end."""
    lines = [
        "| process | CPU % mean | CPU % max | RSS MB start | RSS MB max | RSS MB end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, s in sorted(result.processes.items()):
        if not s.rss_mb:
            continue
        cpu_mean = statistics.fmean(s.cpu) if s.cpu else 0.0
        cpu_max = max(s.cpu, default=0.0)
        lines.append(
            f"| {name} | {cpu_mean:.1f} | {cpu_max:.1f} | {s.rss_mb[0]:.0f} | {max(s.rss_mb):.0f} "
            f"| {s.rss_mb[-1]:.0f} |"
        )
    return lines


def stack_rss(result: RunResult) -> tuple[float, float, float]:
    """The whole stack's RSS in MB: at the start, its peak sample, at the end."""
    series = [s.rss_mb for n, s in result.processes.items() if s.rss_mb and n != LOAD_GENERATOR]
    length = min(len(s) for s in series)
    totals = [sum(s[i] for s in series) for i in range(length)]
    return totals[0], max(totals), totals[-1]


def cpu_means(result: RunResult) -> tuple[float, float]:
    """Mean CPU% of the whole stack (summed over its processes; 100 is one core) and of locust."""
    stack = sum(
        statistics.fmean(s.cpu)
        for n, s in result.processes.items()
        if s.cpu and n != LOAD_GENERATOR
    )
    generator = result.processes.get(LOAD_GENERATOR)
    return stack, statistics.fmean(generator.cpu) if generator and generator.cpu else 0.0


def stub_pace() -> str:
    """The stub script's pace, as the report states it."""
    script = json.loads(STUB_SCRIPT.read_text())
    delays = {float(r.get("delay_ms", 0)) for r in script["responses"]}
    words = [
        len(r["chunks"]) for r in script["responses"] if not r.get("match", "").startswith("You")
    ]
    pace = ", ".join(f"{d:g} ms a token ({1000 / d:.0f} tokens/s)" for d in sorted(delays) if d)
    return f"{pace}; answers of {min(words)} to {max(words)} chunks"


def setup_lines(args: argparse.Namespace) -> list[str]:
    """The machine and the run's settings."""
    limit = f"{args.rate_limit:g}/min per caller" if args.rate_limit else "off"
    return [
        f"- Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.node()}: "
        f"{psutil.cpu_count()} logical cores ({psutil.cpu_count(logical=False)} physical), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM, Python {platform.python_version()}. "
        "Load generator and stack share the machine; figures from a small, shared VM are noisy.",
        "- Stack: `memex up` on free loopback ports (embedded store, the demo vault indexed), "
        "reasoner on the `stub` engine replaying `benchmarks/load/stub_script.json`: "
        f"{stub_pace()}.",
        f"- Gateway rate limit: {limit}. Mix per user (locust weights): ask stream 3, chat stream "
        "3, search 4, records query 3, queued turn 1; 1-3 s between tasks; each user runs every "
        "task once first (so short runs cover the mix), then picks by weight.",
        "- SSE rows: `(first event)` is time to the first SSE event, `(first words)` to the first "
        "`delta`, `(stream)` the whole stream to `result`/`done`. `turn: queued -> answered` is "
        "POST /v1/turns, then GET /v1/turns/{id} each 0.5 s until the worker answered (the polls "
        "are most of the requests/s). Rows marked * re-time requests counted in other rows: "
        "they are left out of the request totals.",
    ]


def run_section(title: str, result: RunResult) -> list[str]:
    """One locust run written out."""
    start, peak, end = stack_rss(result)
    return [
        f"## {title}",
        "",
        f"{result.users} users for {result.seconds:.0f} s: **{result.rps():.1f} requests/s**, "
        f"error ratio {result.error_ratio():.1%} (failed requests and unanswered turns).",
        "",
        *endpoint_table(result),
        "",
        f"Failures by status: {failures_line(result.failures)}.",
        "",
        f"Stack RSS (all processes): {start:.0f} MB at the start, {peak:.0f} MB at the peak, "
        f"{end:.0f} MB at the end.",
        "",
        *process_table(result),
        "",
    ]


def broken(step: RunResult, p99_bound_ms: float) -> bool:
    """Whether a step is past saturation: over 5% errors, or an endpoint's p99 over the bound."""
    return step.error_ratio() > 0.05 or step.worst_p99().p99 > p99_bound_ms


def p50_p99(step: RunResult, name: str) -> str:
    """One endpoint's p50 / p99 in ms, or a dash when it did not run."""
    row = step.row(name)
    return f"{ms(row.p50)} / {ms(row.p99)}" if row else "-"


SATURATION_COLUMNS = {
    "search": "POST /v1/search",
    "ask first words": "POST /v1/ask (first words)",
    "ask stream": "POST /v1/ask (stream)",
    "chat stream": "POST /v1/chat (stream)",
    "queued turn": TURN_ROW,
}


def saturation_section(steps: list[RunResult], p99_bound_ms: float) -> list[str]:
    """The stepped run, and where and how it broke."""
    heads = " | ".join(f"{label} p50 / p99 ms" for label in SATURATION_COLUMNS)
    lines = [
        "## Saturation",
        "",
        f"Users stepped up, {steps[0].seconds:.0f} s or so a step (a fresh locust each step, on "
        "the same stack), until the error ratio (failed requests and unanswered turns) passes 5%, "
        f"a request's p99 passes {ms(p99_bound_ms)} ms, or the top step is reached. A queued "
        "turn's wait does not stop it: the worker answers turns one at a time, so that wait "
        "measures the queue (shown in its column).",
        "",
        f"| users | req/s | errors | {heads} | worst p99 | failures by status | RSS MB end "
        "| stack CPU % | locust CPU % |",
        "|---:|---:|---:|" + "---:|" * len(SATURATION_COLUMNS) + "---|---|---:|---:|---:|",
    ]
    for step in steps:
        cells = " | ".join(p50_p99(step, name) for name in SATURATION_COLUMNS.values())
        worst = step.worst_p99()
        lines.append(
            f"| {step.users} | {step.rps():.1f} | {step.error_ratio():.1%} | {cells} "
            f"| `{worst.name}` {ms(worst.p99)} | {failures_line(step.failures)} "
            f"| {stack_rss(step)[2]:.0f} | {cpu_means(step)[0]:.0f} | {cpu_means(step)[1]:.0f} |"
        )
    lines += [
        "",
        f"CPU % is the mean over the step, 100 = one core of {psutil.cpu_count()}; stack CPU sums "
        "its processes.",
        "",
        verdict(steps, p99_bound_ms),
        "",
    ]
    return lines


SHED = ("429", "503", "RESOURCE_EXHAUSTED", "UNAVAILABLE")


def verdict(steps: list[RunResult], p99_bound_ms: float) -> str:
    """Where the stack broke and how, in words."""
    broke = next((s for s in steps if broken(s, p99_bound_ms)), None)
    best = max(steps, key=lambda s: s.rps())
    rss = [stack_rss(s)[2] for s in steps]
    growth = (rss[-1] - rss[0]) / rss[0] if rss[0] else 0.0
    memory = (
        f"Stack RSS at the end of each step went from {rss[0]:.0f} MB to {rss[-1]:.0f} MB "
        f"({growth:+.0%})."
    )
    peak = f"Throughput peaked at {best.rps():.1f} requests/s ({best.users} users)."
    turns = [(s.users, s.row(TURN_ROW)) for s in steps]
    waits = ", ".join(f"{ms(row.p50)} ms at {users} users" for users, row in turns if row)
    queue = f"Queued turns waited (p50) {waits}." if waits else ""
    unanswered = [str(users) for users, row in turns if row is None]
    if unanswered:
        queue += (
            f" At {', '.join(unanswered)} users no queued turn was answered within its step "
            "(-): the queue outgrew the step."
        )
    last = steps[-1]
    if last is not best and last.rps() < 0.8 * best.rps():
        stack_cpu, locust_cpu = cpu_means(last)
        cores = 100 * (psutil.cpu_count() or 1)
        limit = (
            f"the cores are the limit: stack {stack_cpu:.0f}% + locust {locust_cpu:.0f}% of "
            f"{cores}%"
            if stack_cpu + locust_cpu >= 0.8 * cores
            else f"the cores are not full: stack {stack_cpu:.0f}% + locust {locust_cpu:.0f}% of "
            f"{cores}%"
        )
        refused = "no request refused" if not last.failures else failures_line(last.failures)
        peak += (
            f" Past it throughput fell to {last.rps():.1f} requests/s at {last.users} users while "
            f"`{last.worst_p99().name}` p99 rose to {ms(last.worst_p99().p99)} ms ({refused}): "
            f"requests queue ({limit})."
        )
    if broke is None:
        return f"It did not break up to {steps[-1].users} users. {peak} {memory} {queue}"
    shed = {k: v for k, v in broke.failures.items() if any(c in k for c in SHED)}
    other = {k: v for k, v in broke.failures.items() if k not in shed}
    how = []
    worst = broke.worst_p99()
    if worst.p99 > p99_bound_ms:
        how.append(f"`{worst.name}` p99 {ms(worst.p99)} ms (queueing)")
    if shed:
        how.append(f"load shed with {failures_line(shed)} (the right way to refuse)")
    if other:
        how.append(f"other failures {failures_line(other)} (not the right way)")
    return f"It broke at **{broke.users} users**: {'; '.join(how)}. {peak} {memory} {queue}"


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    """Runs the load (and optionally the saturation and real-model runs) and writes the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=10, help="simulated users (default 10)")
    parser.add_argument("--duration", type=int, default=60, help="seconds of load (default 60)")
    parser.add_argument("--saturate", action="store_true", help="also step the users up")
    parser.add_argument(
        "--steps", default=",".join(map(str, SATURATION_STEPS)), help="saturation user steps"
    )
    parser.add_argument("--step-duration", type=int, default=20, help="seconds per step")
    parser.add_argument(
        "--p99-bound-ms", type=float, default=30_000, help="saturation stops past this p99"
    )
    parser.add_argument("--real-model", action="store_true", help="also 1 user on the real model")
    parser.add_argument("--real-duration", type=int, default=120, help="real-model seconds")
    parser.add_argument(
        "--rate-limit", type=float, default=0, help="gateway requests/min per caller (0: off)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "load.md")
    parser.add_argument(
        "--grpc",
        type=int,
        default=0,
        metavar="SECONDS",
        help="also drive each stage's gRPC port with ghz for this long (`make ghz` builds it)",
    )
    parser.add_argument(
        "--dashboard",
        type=Path,
        help="run Prometheus (`memex observe`) beside the stub stack, check every Grafana "
        "panel's query against it after the load, and draw the panels into this PNG",
    )
    args = parser.parse_args()

    sections: list[str] = []

    def write() -> None:
        # After every section: a run that fails later still leaves the figures it measured.
        write_report(args, sections)

    with tempfile.TemporaryDirectory(prefix="memex-load-") as tmp:
        work = Path(tmp)
        data = work / "data"
        env = stack_env(data, stub=True, rate_limit=args.rate_limit)
        print(f"starting a private stack (stub reasoner) in {data}", flush=True)
        if args.dashboard:
            memex(env, "observe", "--config-only")  # Prometheus's gateway key, before the gateway
        with running_stack(env) as url, observed(env, work, on=bool(args.dashboard)) as prom:
            print(f"load: {args.users} users for {args.duration} s against {url}", flush=True)
            load_started = time.time()
            result = run_locust(url, data, work, args.users, args.duration, "load")
            sections += run_section("Load (stub reasoner)", result)
            write()
            if args.grpc:
                ghz = ghz_binary()
                if ghz is None:
                    raise SystemExit("ghz is missing: run `make ghz`")
                print(f"gRPC: ghz on each stage for {args.grpc} s", flush=True)
                grpc = [run_stage(ghz, env, call, args.grpc) for call in CALLS]
                sections += grpc_section(grpc, args.grpc)
                write()
            if args.saturate:
                steps = []
                for users in (int(u) for u in args.steps.split(",")):
                    print(f"saturation: {users} users for {args.step_duration} s", flush=True)
                    step = run_locust(url, data, work, users, args.step_duration, f"step{users}")
                    steps.append(step)
                    if broken(step, args.p99_bound_ms):
                        break
                sections += saturation_section(steps, args.p99_bound_ms)
                write()
            if args.dashboard:
                checked = check_dashboard(prom, args.dashboard, load_started)
                sections += dashboard_section(checked, args.dashboard, args.out)
                write()
                if checked.returncode != 0:
                    raise SystemExit(f"dashboard panels without data:\n{checked.stdout}")
        if args.real_model:
            real_data = work / "real"
            real_env = stack_env(real_data, stub=False, rate_limit=args.rate_limit)
            print(f"real model: 1 user for {args.real_duration} s", flush=True)
            with running_stack(real_env) as url:
                real = run_locust(url, real_data, work, 1, args.real_duration, "real")
            sections += run_section(f"One user on the real default model ({real_model()})", real)
            write()
    print(f"wrote {args.out}")


@contextlib.contextmanager
def observed(env: dict[str, str], work: Path, *, on: bool) -> Iterator[str]:
    """`memex observe` (the real Prometheus scraping every stack process) while the block runs,
    when ``on``; yields Prometheus's URL (empty when off)."""
    if not on:
        yield ""
        return
    log = (work / "prometheus.log").open("wb")
    with log, subprocess.Popen([*CLI, "observe"], env=env, stdout=log, stderr=log) as prometheus:
        try:
            yield f"http://127.0.0.1:{env['MEMEX_PROMETHEUS_PORT']}"
        finally:
            prometheus.terminate()  # observe runs as Prometheus itself: this stops it
            prometheus.wait(timeout=30)


def check_dashboard(
    prometheus: str, picture: Path, since: float
) -> subprocess.CompletedProcess[str]:
    """scripts/dashboard_check.py against the Prometheus that watched the load since ``since``
    (a time.time()), once it has scraped the end of the run."""
    time.sleep(2 * SCRAPE_SECONDS + 2)
    minutes = f"{(time.time() - since) / 60:.2f}"
    command = [sys.executable, str(REPO / "scripts" / "dashboard_check.py")]
    command += ["--prometheus", prometheus, "--minutes", minutes, "--picture", str(picture)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def dashboard_section(
    checked: subprocess.CompletedProcess[str], picture: Path, report: Path
) -> list[str]:
    """What the dashboard's panels showed for this load, and the picture of them."""
    lines = ["## The dashboard during this load", ""]
    lines += [
        "Prometheus (`memex observe`) scraped every process during the runs above; each panel "
        "of deploy/grafana/memex.json was evaluated through its HTTP API "
        "(scripts/dashboard_check.py):",
        "",
        "```",
        checked.stdout.strip() or checked.stderr.strip(),
        "```",
        "",
    ]
    with contextlib.suppress(ValueError):
        lines += [
            f"![the dashboard's panels]({picture.resolve().relative_to(report.resolve().parent)})",
            "",
        ]
    return lines


def real_model() -> str:
    """The catalogue's default reasoner model, which a stack without the stub runs."""
    return os.environ.get("MEMEX_REASONER_MODEL") or DEFAULT_MODEL


def write_report(args: argparse.Namespace, sections: list[str]) -> None:
    """docs/load.md (or --out): the setup, then the sections measured so far."""
    report = [
        "# Load: the gateway under HTTP and SSE load",
        "",
        "Written by `make load` (`benchmarks/load/run_load.py`, locust "
        "`benchmarks/load/locustfile.py`). Rerun it for figures of your own machine.",
        "",
        "## Setup",
        "",
        *setup_lines(args),
        "",
        *sections,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report).rstrip() + "\n")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()

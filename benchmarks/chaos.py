"""`make chaos`: faults under load on the real stack, and what must hold after each.

    python benchmarks/chaos.py [--out docs/chaos.md] [--soak-seconds 600]

A private stack (its data dir on a small tmpfs when this may mount one, so the disk can be
filled) serves the load mix while a writer keeps writing notes, conversations and queued turns.
In turn: kill -9 each process, SIGSTOP retrieval for 10 s, fill the data dir's disk, and corrupt
the vector index file. After each fault: every streamed answer open during it ended (an `error`
event or its result; a dropped connection only when the gateway itself died), the service was
serving again within 5 s of its restart. At the end: no acknowledged write was lost, every
queued turn was answered, and the supervisor's restarts show in its metrics. Exit 1 on any
failure, with the report saying which.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from chaos_faults import RunningStack, corrupt, fill_disk, stop_for
from chaos_ledger import (
    Ledger,
    StreamEnd,
    Writer,
    lost_writes,
    unfinished_turns,
    watch_ask_stream,
)
from load.run_load import LOCUSTFILE, stack_env

REPO = Path(__file__).resolve().parents[1]
KILLED = ("embedding", "retrieval", "reasoner", "orchestrator", "worker", "gateway")
SERVING_WITHIN_S = 5.0
STREAMS_PER_FAULT = 3
QUESTION = "How much of my deposit did Graham agree to give back, and why?"


@dataclass
class FaultResult:
    """What one fault did and which checks failed."""

    name: str
    detail: str = ""
    streams: list[StreamEnd] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@contextlib.contextmanager
def data_dir_on_tmpfs(parent: Path, size_mb: int) -> Iterator[tuple[Path, bool]]:
    """A data dir on a tmpfs of its own when this process may mount one (root), else a plain
    folder; yields (dir, whether its disk can be filled)."""
    folder = parent / "data"
    folder.mkdir(parents=True)
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    try:
        yield folder, mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def open_streams(stack: RunningStack) -> list[asyncio.Task[StreamEnd]]:
    """Streamed asks, read to their end in the background."""
    return [
        asyncio.create_task(watch_ask_stream(stack.gateway_url, QUESTION, timeout=90))
        for _ in range(STREAMS_PER_FAULT)
    ]


def check_streams(result: FaultResult, ends: list[StreamEnd], gateway_died: bool) -> None:
    """Every stream open during a fault must end: a terminal event, or a dropped connection
    when the gateway itself died. A hang, or a stream that stopped without a terminal event
    while the gateway lived, is a failure."""
    result.streams = ends
    for end in ends:
        if end.how in ("result", "error") or end.how.startswith("http "):
            continue
        if end.how == "disconnected" and gateway_died:
            continue
        result.failures.append(f"a streamed ask ended {end.how!r} after {end.seconds:.1f} s")


async def kill_fault(stack: RunningStack, service: str) -> FaultResult:
    """kill -9 one service while asks stream through it."""
    result = FaultResult(f"kill -9 {service}")
    streams = open_streams(stack)
    await asyncio.sleep(1.0)  # the asks are under way when the process dies
    try:
        recovery = await stack.kill_and_time(service)
    except TimeoutError as exc:
        result.failures.append(str(exc))
        check_streams(result, list(await asyncio.gather(*streams)), service == "gateway")
        return result
    result.detail = (
        f"restarted {recovery.restarted_after_s:.1f} s after the kill, serving "
        f"{recovery.serving_after_restart_s:.2f} s after its restart"
    )
    if recovery.serving_after_restart_s > SERVING_WITHIN_S:
        result.failures.append(f"{service} took {recovery.serving_after_restart_s:.1f} s to serve")
    check_streams(result, list(await asyncio.gather(*streams)), service == "gateway")
    return result


async def stop_fault(stack: RunningStack, service: str, seconds: float) -> FaultResult:
    """SIGSTOP a service for ``seconds`` (a stall: it holds its sockets but answers nothing)."""
    result = FaultResult(f"SIGSTOP {service} for {seconds:.0f} s")
    streams = open_streams(stack)
    await asyncio.sleep(1.0)
    await asyncio.to_thread(stop_for, stack.pid(service), seconds)
    resumed = time.monotonic()
    while not await stack.serving(service):
        if time.monotonic() - resumed > SERVING_WITHIN_S:
            result.failures.append(f"{service} not serving {SERVING_WITHIN_S:.0f} s after SIGCONT")
            break
        await asyncio.sleep(0.1)
    result.detail = f"serving {time.monotonic() - resumed:.2f} s after SIGCONT"
    check_streams(result, list(await asyncio.gather(*streams)), gateway_died=False)
    return result


async def disk_full_fault(stack: RunningStack, ledger: Ledger, can_fill: bool) -> FaultResult:
    """Fills the data dir's disk for a while, the writer still writing: writes may be refused
    (with an error) but nothing may crash, and what was acknowledged must be kept (the end
    checks every acknowledged write, these included)."""
    result = FaultResult("data dir disk full for 10 s")
    if not can_fill:
        result.detail = "skipped: cannot mount a tmpfs here (needs root)"
        return result
    restarts_before, refused_before, acked_before = (
        stack.restarts(),
        ledger.refusals(),
        ledger.count(),
    )
    filler = await asyncio.to_thread(fill_disk, stack.data_dir)
    try:
        await asyncio.sleep(10)
    finally:
        filler.unlink()
    crashed = {n: c for n, c in stack.restarts().items() if c > restarts_before.get(n, 0)}
    if crashed:
        result.failures.append(f"services restarted while the disk was full: {crashed}")
    result.detail = (
        f"{ledger.refusals() - refused_before} writes refused, "
        f"{ledger.count() - acked_before} acknowledged while full"
    )
    return result


async def corrupt_index_fault(stack: RunningStack) -> FaultResult:
    """Stops retrieval cleanly (it saves its vector index), corrupts the saved index file before
    it comes back, and checks that it serves again (the index is rebuilt from SQLite)."""
    result = FaultResult("corrupt the vector (HNSW) index file")
    old = stack.pid("retrieval")
    try:
        os.kill(old, signal.SIGTERM)
        await asyncio.to_thread(psutil.Process(old).wait, 30)
    except (ProcessLookupError, psutil.NoSuchProcess):
        result.failures.append(f"retrieval's pid {old} in the stack state is not running")
        return result
    files = sorted((stack.data_dir / "retrieval").rglob("*.usearch"))
    if not files:
        result.failures.append("no saved vector index to corrupt after a clean stop")
        return result
    overwritten = sum(corrupt(path) for path in files)
    started = time.monotonic()
    while time.monotonic() - started < 60:
        with contextlib.suppress(OSError, ValueError, KeyError):
            if stack.pid("retrieval") != old and await stack.serving("retrieval"):
                break
        await asyncio.sleep(0.1)
    else:
        result.failures.append("retrieval did not come back after its index was corrupted")
    # The orchestrator's channel to retrieval reconnects with gRPC's backoff: a search in the
    # second after the restart may still be told retrieval is unreachable (503), as a person's
    # would. What is checked is that it serves again, from the rebuilt index.
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=60) as client:
        deadline = time.monotonic() + 15
        while True:
            found = await client.post("/v1/search", json={"query": "allotment deposit", "limit": 5})
            if found.status_code != 503 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    if found.status_code != 200 or not found.json()["items"]:
        result.failures.append(f"search after the corruption: {found.status_code} {found.text}")
    result.detail = f"{len(files)} index file(s), {overwritten} bytes overwritten; search answers"
    return result


@contextlib.contextmanager
def background_load(url: str, users: int, log: Path) -> Iterator[None]:
    """The load mix (benchmarks/load/locustfile.py) running headless until the block ends."""
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless"]
    command += ["-u", str(users), "-r", str(users), "--host", url, "--only-summary"]
    with (
        open(log, "w") as out,
        subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT) as p,
    ):
        try:
            yield
        finally:
            p.send_signal(signal.SIGINT)  # locust stops its users and prints its summary
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()


def supervisor_restart_metrics(stack: RunningStack) -> dict[str, float]:
    """``memex_supervisor_restarts_total`` per service, read off the supervisor's /metrics."""
    port = stack.env["MEMEX_SUPERVISOR_METRICS_PORT"]
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    counts = {}
    for line in text.splitlines():
        if line.startswith("memex_supervisor_restarts_total{"):
            labels, value = line.rsplit(" ", 1)
            service = labels.split('service="', 1)[1].split('"', 1)[0]
            counts[service] = float(value)
    return counts


def process_usage(stack: RunningStack) -> dict[str, tuple[int, int]]:
    """Each service's RSS (bytes) and open file descriptors now, its children included."""
    usage = {}
    for name in stack.state():
        with contextlib.suppress(psutil.Error, OSError, ValueError):
            process = psutil.Process(stack.pid(name))
            family = [process, *process.children(recursive=True)]
            usage[name] = (
                sum(p.memory_info().rss for p in family),
                sum(p.num_fds() for p in family),
            )
    return usage


async def soak(stack: RunningStack, seconds: float) -> FaultResult:
    """The load and the writer for ``seconds`` more: every process's RSS and open file
    descriptors must stay flat (the end within 10% of the reading a fifth of the way in,
    after caches have warmed)."""
    result = FaultResult(f"soak {seconds / 60:.0f} min under the same load")
    samples: list[dict[str, tuple[int, int]]] = []
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        samples.append(await asyncio.to_thread(process_usage, stack))
        await asyncio.sleep(10)
    samples.append(await asyncio.to_thread(process_usage, stack))
    base, end = samples[len(samples) // 5], samples[-1]
    rows = []
    for name in base:
        if name not in end:
            result.failures.append(f"{name} was gone at the end of the soak")
            continue
        (rss0, fds0), (rss1, fds1) = base[name], end[name]
        peak = max(s[name][0] for s in samples if name in s)
        rows.append(f"{name} {rss0 >> 20}->{rss1 >> 20} MiB (max {peak >> 20}), fds {fds0}->{fds1}")
        if rss1 > rss0 * 1.10:
            result.failures.append(f"{name}'s RSS grew {rss0 >> 20} -> {rss1 >> 20} MiB")
        if fds1 > fds0 * 1.10 + 2:
            result.failures.append(f"{name}'s open files grew {fds0} -> {fds1}")
    result.detail = f"{len(samples)} samples; " + "; ".join(rows)
    return result


async def chaos(
    stack: RunningStack, can_fill: bool, stall_seconds: float, soak_seconds: float
) -> list[FaultResult]:
    """Every fault in turn, with the writer running throughout; then the end-of-run checks."""
    ledger = Ledger()
    vault = stack.data_dir.parent / "vault"
    vault.mkdir(exist_ok=True)
    stop = asyncio.Event()
    writer = asyncio.create_task(Writer(stack, vault, ledger).run(stop))
    results = []
    try:
        for service in KILLED:
            results.append(await kill_fault(stack, service))
            await asyncio.sleep(2)
        results.append(await stop_fault(stack, "retrieval", stall_seconds))
        results.append(await disk_full_fault(stack, ledger, can_fill))
        results.append(await corrupt_index_fault(stack))
        if soak_seconds > 0:
            results.append(await soak(stack, soak_seconds))
    finally:
        stop.set()
        await writer
    end = FaultResult("after every fault")
    end.failures += [f"lost: {w}" for w in await lost_writes(stack, ledger)]
    end.failures += [
        f"queued turn never answered: {t}"
        for t in await unfinished_turns(stack, ledger, timeout=180)
    ]
    restarts = supervisor_restart_metrics(stack)
    for service in KILLED:
        if restarts.get(service, 0) < 1:
            end.failures.append(f"the supervisor's metrics show no restart of {service}")
    end.detail = (
        f"{len(ledger.notes)} notes, {len(ledger.conversations)} conversations and "
        f"{len(ledger.turns)} queued turns acknowledged; refused: {ledger.refused}, the latest "
        f"reasons: {ledger.last_refusal}; "
        f"restarts in metrics: {restarts}"
    )
    results.append(end)
    return results


def report(results: list[FaultResult], load: str) -> str:
    """The chaos report (Markdown)."""
    lines = [
        "# Faults under load",
        "",
        f"`make chaos` on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}; load: {load}.",
        "",
        "| fault | what happened | streamed asks ended | verdict |",
        "|---|---|---|---|",
    ]
    for r in results:
        ends = ", ".join(sorted({e.how for e in r.streams})) or "-"
        verdict = "ok" if not r.failures else "FAILED: " + "; ".join(r.failures)
        lines.append(f"| {r.name} | {r.detail} | {ends} | {verdict} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Runs the chaos test; exit 1 when any check failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the report here too")
    parser.add_argument("--users", type=int, default=4, help="locust users in the load mix")
    parser.add_argument("--stall-seconds", type=float, default=10.0)
    parser.add_argument("--tmpfs-mb", type=int, default=512)
    parser.add_argument("--logs", type=Path, help="keep the stack's logs here")
    parser.add_argument(
        "--soak-seconds", type=float, default=0, help="then this long under load (600: 10 min)"
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="memex-chaos-") as tmp,
        data_dir_on_tmpfs(Path(tmp), args.tmpfs_mb) as (data, can_fill),
    ):
        # A generous rate limit: the chaos writer and the load must not be refused for volume.
        stack = RunningStack(stack_env(data, stub=True, rate_limit=100_000))
        try:
            up = stack.memex("up")
            if up.returncode != 0:
                print(up.stdout + up.stderr, file=sys.stderr)
                return 1
            indexed = stack.memex("index", str(REPO / "demo" / "vault"))
            if indexed.returncode != 0:
                print(indexed.stdout + indexed.stderr, file=sys.stderr)
                return 1
            with background_load(stack.gateway_url, args.users, Path(tmp) / "locust.log"):
                results = asyncio.run(chaos(stack, can_fill, args.stall_seconds, args.soak_seconds))
        finally:
            stack.memex("down", timeout=120)
            if args.logs:
                shutil.copytree(data / "logs", args.logs, dirs_exist_ok=True)
    text = report(results, f"locust, {args.users} users")
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The queue on PostgreSQL (issue 14): 2 orchestrators, 3 chat workers and 1 PostgreSQL; 200
turns queued across 40 threads through both orchestrators; `kill -9` of a worker and of an
orchestrator mid-run. Every turn is answered exactly once, every thread is intact and in order,
the audit log has one row per model call, and the load is shared.

The stack (`memex up`: embedding, retrieval, reasoner, one orchestrator and one worker, under the
supervisor) runs on the stub reasoner with a short script: the thing under test is the queue, not
the model. A second orchestrator and two more workers are started beside it, on the same
PostgreSQL. The killed worker and orchestrator are the supervisor's, which restarts them (the
restarted worker takes back the turn it held at once, by its id; the lease would also free it).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from memex.cli.stack.services import stack_services
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.pgcluster import INSTALL_HINT, Cluster, find_bin_dir
from memex.shared.stack_settings import StackSettings
from memex.testing import free_ports, private_postgres
from memex.testing.stack import private_stack_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(420)]

CLI = [sys.executable, "-m", "memex.cli"]
THREADS, PER_THREAD = 40, 5  # 200 turns
STACK_WORKER = f"{socket.gethostname()}-chat-worker"  # the supervised worker's default id
KILL_AFTER = 120  # turns queued before the kills; the rest go to the surviving orchestrator
NOTES = {
    "Flat lease.md": "---\ntitle: Flat lease\n---\nGraham returned £1,030 of the deposit.\n",
    "Allotment.md": "---\ntitle: Allotment\n---\nPlot 23B costs £48 a year.\n",
}
# Every model call gets this answer, a little slowly, so a kill lands mid-answer.
SCRIPT = {
    "responses": [
        {
            "delay_ms": 30,
            "chunks": [
                "Graham returned ",
                "£1,030 of the deposit.",
                '\n@@CITATIONS@@\n[{"ref": "[[Flat lease]]", "quote": "Graham", ',
                '"support": "verbatim"}]',
            ],
        }
    ]
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with private_postgres() as running:
        yield running


def memex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300)


def stack_pid(data_dir: Path, service: str) -> int:
    state = json.loads((data_dir / "run" / "stack.json").read_text())
    return int(state["services"][service]["pid"])


def handled(metrics_port: str, method: str) -> int:
    """A service's own count of ``method`` calls it handled, whatever their outcome."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith("memex_grpc_server_handled_total") and f'/{method}"' in line
    )


def extra_processes(
    env: dict[str, str], log_dir: Path
) -> tuple[list[subprocess.Popen[bytes]], tuple[str, str]]:
    """A second orchestrator and two more workers, with the stack's settings and their own
    ports and worker ids; returns them, and the second orchestrator's address and metrics port."""
    settings = StackSettings.model_validate(_stack_fields(env))
    services = {s.name: s for s in stack_services(settings)}
    orchestrator_port, orchestrator_metrics, *ports = free_ports(6)
    base = {**env, **services["orchestrator"].env}
    specs = {
        "orchestrator-2": (
            "memex.orchestrator",
            {
                "MEMEX_ORCHESTRATOR_PORT": str(orchestrator_port),
                "MEMEX_ORCHESTRATOR_METRICS_PORT": str(orchestrator_metrics),
            },
        ),
    }
    for i, (port, metrics) in enumerate([(ports[0], ports[1]), (ports[2], ports[3])], start=2):
        specs[f"worker-{i}"] = (
            "memex.orchestrator.queue.worker",
            {
                "MEMEX_ORCHESTRATOR_WORKER_ID": f"worker-{i}",
                "MEMEX_ORCHESTRATOR_WORKER_PORT": str(port),
                "MEMEX_ORCHESTRATOR_WORKER_METRICS_PORT": str(metrics),
            },
        )
    started = []
    for name, (module, extra) in specs.items():
        out = open(log_dir / f"{name}.log", "wb")  # noqa: SIM115 (the process keeps it)
        # The stack's orchestrator serves its metrics port; a worker serves its own.
        env_of = {**base, "MEMEX_ORCHESTRATOR_METRICS_PORT": "", **extra}
        if not env_of["MEMEX_ORCHESTRATOR_METRICS_PORT"]:
            del env_of["MEMEX_ORCHESTRATOR_METRICS_PORT"]
        started.append(
            subprocess.Popen([sys.executable, "-m", module], env=env_of, stdout=out, stderr=out)
        )
    return started, (f"127.0.0.1:{orchestrator_port}", str(orchestrator_metrics))


def _stack_fields(env: dict[str, str]) -> dict[str, str]:
    return {
        name: env[f"MEMEX_{name.upper()}"]
        for name in StackSettings.model_fields
        if f"MEMEX_{name.upper()}" in env
    }


async def create_turns(stub: Any, rounds: range, threads: list[str]) -> list[str]:
    """One turn in each thread per round (a new thread in round 0); the ids in order. A call
    refused as UNAVAILABLE is sent again: after the kill the channel may still pick the dead
    orchestrator once, and nothing else is in flight then, so the refused call was never
    handled (a duplicate would fail the count of turns)."""
    ids = []
    for r in rounds:
        for t in range(THREADS):
            request = pb.CreateTurnRequest(
                thread_id=threads[t], text=f"deposit? thread {t} turn {r}"
            )
            for attempt in range(20):
                try:
                    reply = await stub.CreateTurn(request)
                    break
                except grpc.aio.AioRpcError as exc:
                    if exc.code() != grpc.StatusCode.UNAVAILABLE or attempt == 19:
                        raise
                    await asyncio.sleep(0.25)
            threads[t] = reply.turn.thread_id
            ids.append(reply.turn.id)
    return ids


def held(url: str, worker_id: str) -> list[str]:
    """The turns ``worker_id`` holds a claim on (thinking)."""
    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT id FROM turns WHERE state = 'thinking' AND claimed_by = %s", (worker_id,)
        )
        return [row[0] for row in rows]


def finished(url: str) -> int:
    """User turns answered or failed: no worker will touch them again."""
    counts = states(url)
    return counts["answered"] + counts["error"]


async def until(condition: Callable[[], bool], seconds: float) -> None:
    """Polls ``condition`` (PostgreSQL, another process's writes) until true or ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.2)


def states(url: str) -> Counter[str]:
    """How many user turns are in each state."""
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT state, COUNT(*) FROM turns WHERE role = 'user' GROUP BY state")
        return Counter({state: int(count) for state, count in rows})


async def test_two_orchestrators_three_workers_answer_200_turns_exactly_once_through_kills(
    cluster: Cluster, model_dir: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = private_stack_env(
        tmp_path / "data",
        MEMEX_ORCHESTRATOR_STATE_URL=cluster.url,
        MEMEX_REASONER_ENGINE="stub",
        MEMEX_REASONER_STUB_SCRIPT=str(script),
        MEMEX_ORCHESTRATOR_WORKER_POLL_SECONDS="0.2",
        # One model call a turn (no plan hop, which asks the stub for JSON): the queue is tested.
        MEMEX_ORCHESTRATOR_PLAN_HOP="never",
        MEMEX_ORCHESTRATOR_WORKER_LEASE_SECONDS="6",
        MEMEX_ORCHESTRATOR_MAX_PENDING_TURNS="1000",
        MEMEX_START_TIMEOUT_SECONDS="180",
        MEMEX_LOG_LEVEL="WARNING",
    )
    for name in ("MEMEX_REASONER_MODEL", "MEMEX_REASONER_MODEL_PATH"):
        env.pop(name, None)  # the stub refuses to start beside a configured real model
    data_dir = Path(env["MEMEX_DATA_DIR"])
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text)
    extras: list[subprocess.Popen[bytes]] = []
    try:
        started = time.monotonic()
        up = memex(env, "up")
        assert up.returncode == 0, up.stdout + up.stderr
        assert memex(env, "index", str(vault)).returncode == 0
        extras, (second, second_metrics) = extra_processes(env, data_dir / "logs")
        first = f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}"
        await _wait_serving(second)
        print(f"stack up and 2nd orchestrator serving after {time.monotonic() - started:.0f}s")

        threads = [""] * THREADS
        async with open_channel(f"ipv4:{first},{second}") as channel:  # round robin
            stub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
            ids = await create_turns(stub, range(KILL_AFTER // THREADS), threads)
            # The kill lands mid-answer: once 30 turns are answered, when the stack's worker
            # holds a claim.
            await until(lambda: states(cluster.url)["answered"] >= 30, 60)
            await until(lambda: bool(held(cluster.url, STACK_WORKER)), 30)
            held_at_kill = held(cluster.url, STACK_WORKER)
            os.kill(stack_pid(data_dir, "worker"), signal.SIGKILL)
            os.kill(stack_pid(data_dir, "orchestrator"), signal.SIGKILL)
            ids += await create_turns(stub, range(KILL_AFTER // THREADS, PER_THREAD), threads)

            await until(lambda: finished(cluster.url) >= len(ids), 150)
        print(f"{states(cluster.url)} after {time.monotonic() - started:.0f}s")
        reasoner_calls = handled(env["MEMEX_REASONER_METRICS_PORT"], "Generate")
        queued_by_second = handled(second_metrics, "CreateTurn")
        restarts = json.loads(memex(env, "status", "--json").stdout)["services"]
    finally:
        for process in extras:
            process.send_signal(signal.SIGTERM)
        for process in extras:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        memex(env, "down")

    assert len(ids) == len(set(ids)) == THREADS * PER_THREAD
    # Both orchestrators queued turns (the round robin), and the killed ones were restarted.
    assert 0.2 * len(ids) <= queued_by_second < len(ids), queued_by_second
    assert restarts["worker"]["restarts"] == restarts["orchestrator"]["restarts"] == 1, restarts
    with psycopg.connect(cluster.url) as db:
        turns = db.execute(
            "SELECT id, thread_id, role, state, reply_to, seq, claimed_by, text FROM turns ORDER BY seq"
        ).fetchall()
        calls = db.execute("SELECT request_id, outcome FROM llm_log").fetchall()
    users = {t[0]: t for t in turns if t[2] == "user"}
    replies = Counter(t[4] for t in turns if t[2] == "assistant")
    # Every turn answered exactly once: 200 user turns, each answered, each with one reply.
    assert set(users) == set(ids)
    assert all(u[3] == "answered" for u in users.values()), Counter(u[3] for u in users.values())
    assert replies == Counter({turn_id: 1 for turn_id in ids})
    assert len(held_at_kill) == 1 and users[held_at_kill[0]][3] == "answered"  # taken back
    # Every thread intact and in order: its questions in the order they were asked, each reply
    # after its question.
    seq = {t[0]: t[5] for t in turns}
    for thread in set(threads):
        asked = [u for u in ids if users[u][1] == thread]
        assert len(asked) == PER_THREAD
        assert [seq[u] for u in asked] == sorted(seq[u] for u in asked)
        assert [users[u][7].rsplit(" ", 1)[1] for u in asked] == [str(r) for r in range(PER_THREAD)]
    assert all(seq[t[0]] > seq[t[4]] for t in turns if t[2] == "assistant")
    # One audit row per model call: every Generate the reasoner handled has its row. Only the
    # kill can leave a row without a call (it may land between the row's write and the call).
    unfinished = [c for c in calls if c[1] == "started"]
    assert reasoner_calls <= len(calls) <= reasoner_calls + 1, (reasoner_calls, len(calls))
    assert len(calls) - reasoner_calls <= len(unfinished) <= 1
    assert {c[0] for c in calls} <= {f"turn-{u}" for u in ids}
    # The load is shared: every worker answered a fair part.
    share = Counter(u[6] for u in users.values())
    print(
        f"answers by worker {dict(share)}; {len(calls)} audit rows, {reasoner_calls} calls; "
        f"the second orchestrator queued {queued_by_second}"
    )
    assert len(share) == 3 and min(share.values()) >= 0.1 * len(ids), share


async def _wait_serving(address: str) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + 90
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.5)
    raise AssertionError(f"the second orchestrator at {address} never served")


async def test_memex_up_state_postgres_runs_its_own_postgresql_and_keeps_the_turns_there(
    model_dir: Path, tmp_path: Path
) -> None:
    """`memex up --state postgres` for a person trying it: the stack runs a local PostgreSQL
    (created in its data dir, or under /var/lib/memex for root), a queued turn is answered, and
    the turn is in PostgreSQL, not in a SQLite file."""
    if find_bin_dir() is None:
        pytest.skip(f"PostgreSQL's binaries are missing: {INSTALL_HINT}")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = private_stack_env(
        tmp_path / "data",
        MEMEX_REASONER_ENGINE="stub",
        MEMEX_REASONER_STUB_SCRIPT=str(script),
        MEMEX_ORCHESTRATOR_WORKER_POLL_SECONDS="0.2",
        MEMEX_ORCHESTRATOR_PLAN_HOP="never",
        MEMEX_START_TIMEOUT_SECONDS="180",
    )
    for name in (
        "MEMEX_REASONER_MODEL",
        "MEMEX_REASONER_MODEL_PATH",
        "MEMEX_ORCHESTRATOR_STATE_URL",
    ):
        env.pop(name, None)
    settings = StackSettings.model_validate(_stack_fields(env))
    try:
        up = memex(env, "up", "--state", "postgres")
        assert up.returncode == 0, up.stdout + up.stderr
        data_dir = Path(env["MEMEX_DATA_DIR"])
        supervised = json.loads((data_dir / "run" / "stack.json").read_text())["services"]
        assert "postgres" in supervised  # the supervisor runs it, first
        # `memex status` shows it too, read from what `up` was given, not its own environment.
        status = json.loads(memex(env, "status", "--json").stdout)["services"]
        assert status["postgres"]["health"] == "SERVING", status
        async with grpc.aio.insecure_channel(f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}") as ch:
            stub = orchestrator_pb2_grpc.OrchestratorServiceStub(ch)
            created = await stub.CreateTurn(pb.CreateTurnRequest(text="what did Graham return"))
            deadline = time.monotonic() + 60
            state = created.turn.state
            while state != pb.TURN_STATE_ANSWERED and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                state = (await stub.GetTurn(pb.GetTurnRequest(turn_id=created.turn.id))).turn.state
        assert state == pb.TURN_STATE_ANSWERED
        with psycopg.connect(settings.postgres_url) as db:
            rows = db.execute(
                "SELECT role, state FROM turns WHERE thread_id = %s ORDER BY seq",
                (created.turn.thread_id,),
            ).fetchall()
        assert rows == [("user", "answered"), ("assistant", "answered")]
        assert not (data_dir / "orchestrator" / "state.db").exists()
    finally:
        memex(env, "down")
        shutil.rmtree(settings.postgres_dir, ignore_errors=True)

"""The queued-turn chat worker as a stack process (SPEC B13): `kill -9` in the middle of an answer
loses nothing, and after the supervisor restarts it the turn is answered exactly once. Real
processes, the real embedding model and the real default llama.cpp model. The stack runs with
MEMEX_INTERNAL_AUTH=token, so the worker's calls (and the restarted worker's) carry the token."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.reasoner.catalogue import tiny_model_path
from memex.shared.client import open_channel
from memex.shared.settings import InternalAuthSettings
from memex.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TOKEN = "worker-kill-test-" + "0123456789abcdef" * 2

NOTES = {
    "Flat lease.md": "---\ntitle: Flat lease\ndate: 2026-02-01\n---\n# Deposit\nGraham agreed to "
    "return £1,030 of the £1,150 deposit; £120 went on carpet cleaning.\n",
    "Allotment.md": "---\ntitle: Allotment\ndate: 2026-03-01\n---\nPlot 23B costs £48 a year.\n",
}


def run(
    command: list[str], env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def worker_pid(data_dir: Path) -> int:
    state = json.loads((data_dir / "run" / "stack.json").read_text())
    return int(state["services"]["worker"]["pid"])


def calls(data_dir: Path, turn_id: str, outcome: str) -> list[str]:
    """The purposes of the audited model calls made for a queued turn, with that outcome."""
    with contextlib.closing(sqlite3.connect(data_dir / "orchestrator" / "state.db")) as db:
        rows = db.execute(
            "SELECT purpose FROM llm_log WHERE request_id = ? AND outcome = ? ORDER BY created_at",
            (f"turn-{turn_id}", outcome),
        )
        return [row[0] for row in rows]


def foreground_worker(memex_cli: list[str], env: dict[str, str]) -> str:
    """Starts `memex worker`, returns its "started" log line once it is running, stops it with
    SIGTERM and checks it exits 0."""
    foreground = subprocess.Popen(
        [*memex_cli, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert foreground.stdout is not None
        started = next(
            (line for line in foreground.stdout if "chat worker" in line and "started" in line), ""
        )
        foreground.send_signal(signal.SIGTERM)
        assert foreground.wait(timeout=30) == 0
        return started
    finally:
        if foreground.poll() is None:
            foreground.kill()
            foreground.wait()


async def test_a_worker_killed_mid_answer_is_restarted_and_answers_the_turn_exactly_once(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    require(tiny_model_path(), "run `make models`")
    # A short poll so the turn is claimed at once; the rest is the stack as `memex up` runs it.
    env = {
        **stack_env,
        "MEMEX_ORCHESTRATOR_WORKER_POLL_SECONDS": "0.1",
        "MEMEX_INTERNAL_AUTH": "token",
        "MEMEX_INTERNAL_TOKEN": TOKEN,
    }
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text)
    up = run(memex_cli, env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "worker" in up.stdout
    assert run(memex_cli, env, "index", str(vault)).returncode == 0
    data_dir = Path(env["MEMEX_DATA_DIR"])
    first_pid = worker_pid(data_dir)

    address = f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}"
    async with grpc.aio.insecure_channel(address) as plaintext:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await orchestrator_pb2_grpc.OrchestratorServiceStub(plaintext).CreateTurn(
                pb.CreateTurnRequest(text="no token")
            )
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    async with open_channel(
        address, auth=InternalAuthSettings(auth="token", token=TOKEN)
    ) as channel:
        stub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
        created = await stub.CreateTurn(
            pb.CreateTurnRequest(text="How much of the deposit did Graham return?")
        )
        turn = created.turn
        deadline = time.monotonic() + 60
        state = turn.state
        while state != pb.TURN_STATE_THINKING and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
            state = (await stub.GetTurn(pb.GetTurnRequest(turn_id=turn.id))).turn.state
        assert state == pb.TURN_STATE_THINKING, "the worker never claimed the turn"
        # Wait until the model is generating for this turn (its audited call has begun), so
        # the kill lands in the middle of the answer, not before or after it.
        for _ in range(3000):
            if calls(data_dir, turn.id, "started"):
                break
            await asyncio.sleep(0.02)
        assert calls(data_dir, turn.id, "started"), "the worker never called the model"

        os.kill(first_pid, signal.SIGKILL)
        # Killed mid-answer: nothing was answered, and the claim is still on the turn.
        listed = await stub.ListTurns(pb.ListTurnsRequest(thread_id=turn.thread_id))
        assert [(t.role, t.state) for t in listed.turns] == [
            (pb.MESSAGE_ROLE_USER, pb.TURN_STATE_THINKING)
        ]

        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            state = (await stub.GetTurn(pb.GetTurnRequest(turn_id=turn.id))).turn.state
            if state in (pb.TURN_STATE_ANSWERED, pb.TURN_STATE_ERROR):
                break
            await asyncio.sleep(0.25)
        answered = await stub.GetTurn(pb.GetTurnRequest(turn_id=turn.id))
        assert answered.turn.state == pb.TURN_STATE_ANSWERED, answered.turn.error
        listed = await stub.ListTurns(pb.ListTurnsRequest(thread_id=turn.thread_id))

    roles = [t.role for t in listed.turns]
    assert roles == [pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT]  # answered exactly once
    assert listed.turns[1].text

    second_pid = worker_pid(data_dir)
    assert second_pid != first_pid
    status = json.loads(run(memex_cli, env, "status", "--json").stdout)
    assert status["services"]["worker"]["health"] == "SERVING"
    assert status["services"]["worker"]["restarts"] == 1
    with sqlite3.connect(data_dir / "orchestrator" / "state.db") as db:
        assert db.execute("SELECT COUNT(*) FROM turns WHERE role = 'assistant'").fetchone() == (1,)
        finished = [
            row[0]
            for row in db.execute("SELECT purpose FROM llm_log WHERE outcome IN ('ok', 'stopped')")
        ]
    # The restarted worker asked the real model again and that call finished: "ok", or
    # "stopped" where the reply stopped the tiny model repeating itself.
    assert "ask_synthesize" in finished

    # `memex worker` still runs one in the foreground, beside the supervised one (its own id and
    # health port), and stops cleanly on SIGTERM.
    assert "-chat-worker-foreground started" in foreground_worker(memex_cli, env)

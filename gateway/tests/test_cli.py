"""The `memex` command line without a running stack: help, and a clear way out when it is down."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memex.cli.stack.supervisor import alive
from memex.testing import free_ports
from memex.testing.stack import private_stack_env

COMMANDS = [
    "up", "down", "status", "embed", "ask", "chat", "conversations", "forget", "worker", "index",
    "search", "query", "timeline", "inbox", "note", "mcp", "keys", "observe", "certs",
]  # fmt: skip


def memex(tmp_path: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    embedding_port, orchestrator_port = free_ports(2)
    env = {
        **os.environ,
        "MEMEX_DATA_DIR": str(tmp_path),
        "MEMEX_EMBEDDING_PORT": str(embedding_port),
        "MEMEX_ORCHESTRATOR_PORT": str(orchestrator_port),
        **settings,
    }
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_help_lists_every_command(tmp_path: Path) -> None:
    result = memex(tmp_path, "--help")
    assert result.returncode == 0
    for command in COMMANDS:
        assert command in result.stdout


@pytest.mark.parametrize(
    "args",
    [["ask", "what?"], ["conversations"], ["forget", "abc"], ["chat", "hello"], ["embed", "x"]],
)
def test_commands_say_how_to_start_memex_when_it_is_down(tmp_path: Path, args: list[str]) -> None:
    result = memex(tmp_path, *args)
    assert result.returncode == 3, result.stderr
    assert "memex up" in result.stdout + result.stderr


def test_a_bad_setting_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "MEMEX_EMBEDDING_PORT": "not-a-port"}
    result = subprocess.run(
        [sys.executable, "-m", "memex.cli", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("invalid MEMEX_EMBEDDING_PORT: Input should be a valid integer")
    assert "errors.pydantic.dev" not in result.stderr


def test_status_json_says_where_the_web_chat_is(tmp_path: Path) -> None:
    result = memex(tmp_path, "status", "--json", MEMEX_GATEWAY_PORT="18765")
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["running"] is False
    assert report["web_url"] == "http://127.0.0.1:18765/"
    assert "gateway" in report["services"] and "worker" in report["services"]


def test_up_says_which_port_another_program_holds(tmp_path: Path) -> None:
    env = private_stack_env(tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(env["MEMEX_GATEWAY_PORT"])))
        squatter.listen()
        result = subprocess.run(
            [sys.executable, "-m", "memex.cli", "up"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    port = env["MEMEX_GATEWAY_PORT"]
    assert f"port {port} is in use by another program" in result.stdout
    assert "MEMEX_GATEWAY_PORT" in result.stdout and "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "stack.json").exists()  # nothing was started


@pytest.mark.e2e
def test_up_shows_why_a_service_failed_to_start(tmp_path: Path) -> None:
    env = private_stack_env(tmp_path, MEMEX_REASONER_MODEL="no-such-model")
    env.pop("MEMEX_STORE", None)
    result = subprocess.run(
        [sys.executable, "-m", "memex.cli", "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    # The reasoner's own words, not only "see reasoner.log".
    assert "reasoner exited with 2 while starting" in result.stdout
    assert "unknown reasoner model 'no-such-model'" in result.stdout
    assert "stopped embedding" in result.stdout  # what did start was stopped again


def test_certs_writes_a_folder_per_service_and_says_how_to_mount_it(tmp_path: Path) -> None:
    out = tmp_path / "certs"
    result = memex(tmp_path, "certs", "--out", str(out), "--service", "embedding")
    assert result.returncode == 0, result.stderr
    assert {p.name for p in (out / "embedding").iterdir()} == {"tls.crt", "tls.key", "ca.crt"}
    assert "create secret generic memex-tls-embedding" in result.stdout
    again = memex(tmp_path, "certs", "--out", str(out), "--service", "worker")
    assert again.returncode == 0 and again.stdout.startswith("reused the CA")


def test_certs_with_bad_input_exits_2(tmp_path: Path) -> None:
    result = memex(tmp_path, "certs", "--out", str(tmp_path / "c"), "--days", "0")
    assert result.returncode == 2
    assert result.stderr == "error: days must be at least 1, not 0\n"


def test_a_short_internal_token_stops_a_command_with_a_clear_error(tmp_path: Path) -> None:
    result = memex(tmp_path, "embed", "x", MEMEX_INTERNAL_AUTH="token", MEMEX_INTERNAL_TOKEN="x")
    assert result.returncode == 2
    assert "MEMEX_INTERNAL_TOKEN of at least 32 characters" in result.stderr
    assert "Traceback" not in result.stderr


def test_down_waits_for_a_process_that_runs_and_not_for_one_that_exited() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert alive(sleeper.pid)
    finally:
        sleeper.kill()
    # Killed but not yet reaped: a zombie, which has closed its sockets and is not running.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and alive(sleeper.pid):
        time.sleep(0.05)
    assert not alive(sleeper.pid)
    sleeper.wait()
    assert not alive(sleeper.pid)  # reaped: gone

"""`memex up --store weaviate`: the real stack with a real Weaviate, then index and search."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.embedding.config import default_model_dir
from memex.retrieval.weaviate_server import WeaviatePorts, find_binary
from memex.testing.retrieval import write
from memex.testing.stack import private_stack_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400)]


def _memex(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def stack_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment of a stack on free ports with its own data dir; `memex down` afterwards."""
    if not (default_model_dir() / "model.onnx").exists():
        pytest.skip("embedding model missing: run `make models`")
    find_binary()  # no binary is an error naming `make weaviate`, not a skip
    env = private_stack_env(tmp_path / "data")
    env.pop("MEMEX_STORE", None)
    try:
        yield env
    finally:
        _memex(env, "down", timeout=120)


def test_up_with_weaviate_indexes_and_searches(stack_env: dict[str, str], tmp_path: Path) -> None:
    up = _memex(stack_env, "up", "--store", "weaviate")
    assert up.returncode == 0, up.stdout + up.stderr
    status = _memex(stack_env, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    services = json.loads(status.stdout)["services"]
    assert list(services) == [
        "weaviate",
        "embedding",
        "retrieval",
        "reasoner",
        "orchestrator",
        "worker",
        "gateway",
    ]
    assert all(s["health"] == "SERVING" for s in services.values())
    key_file = tmp_path / "data" / "weaviate" / "api-key"
    assert key_file.stat().st_mode & 0o777 == 0o600

    vault = tmp_path / "vault"
    write(vault, "Sailing.md", "# Sailing\nWe sailed to the island and saw dolphins.\n")
    write(vault, "Taxes.md", "# Taxes\nFiled the tax return with the accountant.\n")
    indexed = _memex(stack_env, "index", str(vault), "--json")
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    found = _memex(stack_env, "search", "dolphins near the island", "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    items = json.loads(found.stdout)["items"]
    assert items[0]["citation"] == "[[Sailing]]"
    assert any(
        path.name.startswith("MemexChunk") or "memexchunk" in path.name.lower()
        for path in (tmp_path / "data" / "weaviate" / "data").iterdir()
    )


def _cluster_port_layout(env: dict[str, str], nodes: int, step: int = 10) -> dict[str, str]:
    """Node 0's Weaviate ports such that node i's (node 0's + i x step) and each Raft + 1 are all
    free and none is a memex service's port in ``env``: the stack lays a cluster out that way."""
    memex_ports = {
        int(v) for k, v in env.items() if k.endswith("_PORT") and not k.startswith("MEMEX_WEAVIATE")
    }
    kinds = ["http", "grpc", "gossip", "data", "raft"]
    while True:
        base = WeaviatePorts.free()
        wanted = [getattr(base, k) + i * step for k in kinds for i in range(nodes)]
        wanted += [base.raft + 1 + i * step for i in range(nodes)]
        if (
            len(set(wanted)) == len(wanted)
            and not memex_ports & set(wanted)
            and all(_free(p) for p in wanted)
        ):
            ports = {f"MEMEX_WEAVIATE_{k.upper()}_PORT": str(getattr(base, k)) for k in kinds}
            return {**ports, "MEMEX_WEAVIATE_RAFT_RPC_PORT": str(base.raft + 1)}


def _free(port: int) -> bool:
    if port > 65535:
        return False
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_up_with_a_three_node_cluster_survives_losing_a_node(
    stack_env: dict[str, str], tmp_path: Path
) -> None:
    stack_env.update(_cluster_port_layout(stack_env, 3))
    up = _memex(stack_env, "up", "--store", "weaviate", "--nodes", "3")
    assert up.returncode == 0, up.stdout + up.stderr
    status = _memex(stack_env, "status", "--json")
    services = json.loads(status.stdout)["services"]
    nodes = ["weaviate-0", "weaviate-1", "weaviate-2"]
    assert list(services)[:3] == nodes
    assert all(services[n]["health"] == "SERVING" for n in nodes)
    assert sorted(p.name for p in (tmp_path / "data" / "weaviate").iterdir()) == [
        "api-key",
        "node0",
        "node1",
        "node2",
    ]

    vault = tmp_path / "vault"
    write(vault, "Sailing.md", "# Sailing\nWe sailed to the island and saw dolphins.\n")
    indexed = _memex(stack_env, "index", str(vault), "--json")
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr

    # kill -9 the node the retrieval service talks to; the search goes on through another node,
    # and the supervisor starts the node again on its data directory.
    state = json.loads((tmp_path / "data" / "run" / "stack.json").read_text())
    os.kill(state["services"]["weaviate-0"]["pid"], signal.SIGKILL)
    found = _memex(stack_env, "search", "dolphins near the island", "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    assert json.loads(found.stdout)["items"][0]["citation"] == "[[Sailing]]"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = _memex(stack_env, "status", "--json")
        health = json.loads(status.stdout)["services"]["weaviate-0"]
        if health["health"] == "SERVING" and health["restarts"] >= 1:
            break
        time.sleep(1)
    assert health["health"] == "SERVING" and health["restarts"] >= 1, health

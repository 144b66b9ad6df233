"""`memex up --store weaviate --nodes 3`: the stack's Weaviate cluster, as services and env."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from memex.cli.stack.services import stack_services
from memex.retrieval.weaviate_peers import parse_peers
from memex.shared.stack_settings import StackSettings


def _settings(tmp_path: Path, nodes: int) -> StackSettings:
    return StackSettings(data_dir=tmp_path, store="weaviate", weaviate_nodes=nodes)


def test_three_nodes_are_three_services_started_together(tmp_path: Path) -> None:
    services = stack_services(_settings(tmp_path, 3))
    nodes = [s for s in services if s.name.startswith("weaviate")]
    assert [s.name for s in nodes] == ["weaviate-0", "weaviate-1", "weaviate-2"]
    assert {s.group for s in nodes} == {"weaviate"}
    assert [s.address for s in nodes] == ["127.0.0.1:8079", "127.0.0.1:8089", "127.0.0.1:8099"]
    peers = parse_peers(nodes[0].env["MEMEX_WEAVIATE_PEERS"])
    assert [str(p) for p in peers] == ["node0:7946:8300", "node1:7956:8310", "node2:7966:8320"]
    second = nodes[1].env
    assert second["MEMEX_WEAVIATE_NODE_NAME"] == "node1"
    assert second["MEMEX_WEAVIATE_RAFT_RPC_PORT"] == "8311"
    assert second["MEMEX_WEAVIATE_DATA_DIR"] == str(tmp_path / "weaviate" / "node1")
    assert len({s.env["MEMEX_WEAVIATE_API_KEY"] for s in nodes}) == 1  # one cluster secret

    retrieval = next(s for s in services if s.name == "retrieval").env
    assert retrieval["MEMEX_RETRIEVAL_WEAVIATE_REPLICATION_FACTOR"] == "3"
    assert (
        retrieval["MEMEX_RETRIEVAL_WEAVIATE_NODES"] == "127.0.0.1:8089:50069,127.0.0.1:8099:50079"
    )


def test_one_node_is_todays_single_server(tmp_path: Path) -> None:
    services = stack_services(_settings(tmp_path, 1))
    assert services[0].name == "weaviate"
    assert services[0].group == ""
    assert "MEMEX_WEAVIATE_PEERS" not in services[0].env
    retrieval = next(s for s in services if s.name == "retrieval").env
    assert "MEMEX_RETRIEVAL_WEAVIATE_NODES" not in retrieval


def test_two_nodes_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot lose a node"):
        _settings(tmp_path, 2)


def test_nodes_without_weaviate_is_bad_input(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "MEMEX_DATA_DIR": str(tmp_path), "MEMEX_STORE": "embedded"}
    cli = [sys.executable, "-m", "memex.cli", "up", "--nodes", "3"]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--store weaviate" in done.stdout
    two = subprocess.run(
        [*cli[:-1], "2", "--store", "weaviate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert two.returncode == 2
    assert "cannot lose a node" in two.stdout


def test_two_services_on_one_port_are_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="MEMEX_REASONER_PORT and MEMEX_GATEWAY_PORT"):
        StackSettings(data_dir=tmp_path, reasoner_port=18001, gateway_port=18001)
    # A cluster node's port is node 0's plus its offset: node 1's HTTP port lands on the gateway.
    with pytest.raises(ValidationError, match=r"HTTP_PORT \+ 1 x MEMEX_WEAVIATE_PORT_STEP"):
        StackSettings(
            data_dir=tmp_path,
            store="weaviate",
            weaviate_nodes=3,
            weaviate_http_port=18000,
            gateway_port=18010,
        )
    # The embedded store runs no Weaviate, so its ports cannot clash with anything.
    StackSettings(data_dir=tmp_path, weaviate_http_port=18001, gateway_port=18001)


def test_up_with_two_services_on_one_port_is_bad_input(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "MEMEX_DATA_DIR": str(tmp_path)}
    env |= {"MEMEX_REASONER_PORT": "18001", "MEMEX_ORCHESTRATOR_PORT": "18001"}
    cli = [sys.executable, "-m", "memex.cli", "up"]
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "invalid settings: MEMEX_ORCHESTRATOR_PORT and MEMEX_REASONER_PORT are both 18001"
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()  # nothing was started

"""A Weaviate cluster's configuration: peers, each node's environment, the store's nodes and
replication policy. Bad input is a clear error. (The cluster itself: tests/e2e.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.store.weaviate import open_weaviate_store
from memex.retrieval.store.weaviate_replication import (
    ReplicationPolicy,
    WeaviateNode,
    is_transient,
    parse_nodes,
)
from memex.retrieval.weaviate_peers import Peer, cluster_env, parse_peers
from memex.retrieval.weaviate_server import WeaviatePorts, server_env
from memex.shared.errors import InvalidArgument
from memex.testing.weaviate_cluster import cluster_ports

PEERS = "node0:7100:8300,node1:7110:8310,node2:7120:8320"


def test_peers_parse_and_each_node_joins_the_others() -> None:
    peers = parse_peers(PEERS)
    assert peers[1] == Peer("node1", 7110, 8310)
    env = cluster_env("node1", peers, gossip=7110, raft=8310, raft_rpc=8311)
    assert env["CLUSTER_HOSTNAME"] == "node1"
    assert env["CLUSTER_IN_LOCALHOST"] == "true"
    assert env["CLUSTER_JOIN"] == "127.0.0.1:7100,127.0.0.1:7120"
    assert env["RAFT_JOIN"] == "node0:8300,node1:8310,node2:8320"
    assert env["RAFT_BOOTSTRAP_EXPECT"] == "3"
    assert env["ASYNC_REPLICATION_FREQUENCY"] == "5s"
    assert env["RAFT_TIMEOUTS_MULTIPLIER"] == "1"  # a dead leader is replaced in seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("node0:7100", "name:gossip_port:raft_port"),
        ("node0:x:8300", "name:gossip_port:raft_port"),
        ("Node0:7100:8300", "node name"),
        ("node0:80:8300", "1024-65535"),
        ("node0:7100:8300,node0:7110:8310", "repeat"),
    ],
)
def test_bad_peers_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_peers(text)


def test_a_node_must_be_a_peer_on_its_own_ports() -> None:
    peers = parse_peers(PEERS)
    with pytest.raises(InvalidArgument, match="not among its peers"):
        cluster_env("node9", peers, gossip=7100, raft=8300, raft_rpc=8301)
    with pytest.raises(InvalidArgument, match="listens on gossip 7101"):
        cluster_env("node0", peers, gossip=7101, raft=8300, raft_rpc=8301)
    with pytest.raises(InvalidArgument, match="Raft port plus one"):
        cluster_env("node0", peers, gossip=7100, raft=8300, raft_rpc=8400)


def test_single_node_environment_is_unchanged_by_the_cluster_options(tmp_path: Path) -> None:
    ports = WeaviatePorts.free()
    env = server_env(tmp_path, ports, "k3y", "127.0.0.1")
    assert env["RAFT_BOOTSTRAP_EXPECT"] == "1"
    assert "CLUSTER_JOIN" not in env
    assert "CLUSTER_IN_LOCALHOST" not in env


def test_cluster_ports_are_distinct_with_raft_rpc_next_to_raft() -> None:
    ports = cluster_ports(3)
    values = [v for p in ports for v in vars(p).values()]
    assert len(set(values)) == len(values) == 18
    assert all(p.raft_rpc == p.raft + 1 for p in ports)


def test_nodes_parse_and_bad_ones_are_clear_errors() -> None:
    assert parse_nodes("") == []
    assert parse_nodes("127.0.0.1:8089:50069, 127.0.0.1:8099:50079") == [
        WeaviateNode("127.0.0.1", 8089, 50069),
        WeaviateNode("127.0.0.1", 8099, 50079),
    ]
    for bad in ("127.0.0.1:8089", "127.0.0.1:http:50069", ":8089:50069", "h:0:1"):
        with pytest.raises(InvalidArgument, match="host:http_port:grpc_port"):
            parse_nodes(bad)


def test_replication_policy_checks_itself_and_the_node_count() -> None:
    with pytest.raises(InvalidArgument, match=">= 1"):
        ReplicationPolicy(factor=0)
    with pytest.raises(InvalidArgument, match="ONE, QUORUM or ALL"):
        ReplicationPolicy(read="MOST")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="needs at least 3 nodes, but the store knows 1"):
        ReplicationPolicy(factor=3).check_nodes(1)
    ReplicationPolicy(factor=3).check_nodes(3)
    assert ReplicationPolicy().write_level.value == "QUORUM"


async def test_a_factor_above_the_listed_nodes_is_refused_before_connecting() -> None:
    settings = RetrievalSettings(
        store="weaviate",
        weaviate_api_key="k",
        weaviate_replication_factor=3,
        weaviate_nodes="127.0.0.1:1:2",
    )
    with pytest.raises(InvalidArgument, match="MEMEX_RETRIEVAL_WEAVIATE_NODES"):
        await open_weaviate_store(settings, 4)


def test_only_failures_a_lost_node_explains_are_retried() -> None:
    assert not is_transient(InvalidArgument("bad"))
    assert not is_transient(ValueError("bad"))

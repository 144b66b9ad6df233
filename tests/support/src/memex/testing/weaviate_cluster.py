"""A throwaway Weaviate cluster on loopback: N ``WeaviateServer`` processes that are peers.

For tests and benchmarks; `memex up --store weaviate --nodes N` builds the same cluster from
the stack settings instead (``memex.cli.stack.weaviate``).
"""

from __future__ import annotations

import contextlib
import secrets
import socket
from pathlib import Path

from memex.retrieval.weaviate_peers import Peer
from memex.retrieval.weaviate_server import StoppedOnExit, WeaviatePorts, WeaviateServer


def cluster_ports(nodes: int) -> list[WeaviatePorts]:
    """Ports for ``nodes`` nodes, no port used twice."""
    chosen: list[WeaviatePorts] = []
    taken: set[int] = set()
    while len(chosen) < nodes:
        ports = free_node_ports()
        values = set(vars(ports).values())
        if not values & taken:
            chosen.append(ports)
            taken |= values
    return chosen


def free_node_ports() -> WeaviatePorts:
    """Free ports for one node of a one-host cluster, where Raft RPC must be Raft + 1."""
    raft = free_raft_pair()
    while True:
        ports = WeaviatePorts.free()
        if not {raft, raft + 1} & {ports.http, ports.grpc, ports.gossip, ports.data}:
            return WeaviatePorts(ports.http, ports.grpc, ports.gossip, ports.data, raft, raft + 1)


def free_raft_pair() -> int:
    """A port ``p`` such that ``p`` and ``p + 1`` were both free a moment ago (Raft, Raft RPC)."""
    for _ in range(200):
        with contextlib.ExitStack() as held:
            first = held.enter_context(socket.socket())
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            if port >= 65535:
                continue
            second = held.enter_context(socket.socket())
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two consecutive free ports on loopback")


class WeaviateCluster(StoppedOnExit):
    """``nodes`` Weaviate processes sharing one API key, each with its own data directory
    under ``root`` (``node0``, ``node1``, ...); nodes can be killed and started again."""

    def __init__(self, root: Path, nodes: int = 3, *, binary: Path | None = None) -> None:
        if nodes < 2:
            raise ValueError("a cluster has at least two nodes; use WeaviateServer for one")
        api_key = secrets.token_urlsafe(24)
        ports = cluster_ports(nodes)
        peers = [Peer(f"node{i}", p.gossip, p.raft) for i, p in enumerate(ports)]
        self.api_key = api_key
        self.servers = [
            WeaviateServer(
                root / peer.name,
                binary=binary,
                api_key=api_key,
                ports=p,
                node_name=peer.name,
                peers=peers,
            )
            for peer, p in zip(peers, ports, strict=True)
        ]

    def start(self, timeout: float = 180.0) -> None:
        """Starts every node together (Raft waits for all of them to bootstrap), then waits
        until each is ready."""
        for server in self.servers:
            server.start()
        for server in self.servers:
            server.wait_ready(timeout)

    def stop(self) -> None:
        """Stops every node. Idempotent."""
        for server in self.servers:
            server.stop()

    def bring_up(self) -> None:
        """``start()`` with its default timeout."""
        self.start()

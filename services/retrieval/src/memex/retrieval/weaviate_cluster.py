"""A throwaway Weaviate cluster on loopback: N ``WeaviateServer`` processes that are peers.

For tests and benchmarks; `memex up --store weaviate --nodes N` builds the same cluster from
the stack settings instead (``memex.gateway.stack``).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from memex.retrieval.weaviate_peers import Peer
from memex.retrieval.weaviate_server import StoppedOnExit, WeaviatePorts, WeaviateServer


def cluster_ports(nodes: int) -> list[WeaviatePorts]:
    """Ports for ``nodes`` nodes, no port used twice."""
    chosen: list[WeaviatePorts] = []
    taken: set[int] = set()
    while len(chosen) < nodes:
        ports = WeaviatePorts.free_for_cluster()
        values = set(vars(ports).values())
        if not values & taken:
            chosen.append(ports)
            taken |= values
    return chosen


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

"""The stack's Weaviate: its server, or one process per node of a cluster, on the ports the stack
settings (``memex.shared.stack_settings``) give it, and the retrieval service's settings for it
(where it runs, its key, on a cluster the other nodes and the replication factor).
"""

from __future__ import annotations

from pathlib import Path

from memex.cli.stack.processes import ServiceDef
from memex.shared.stack_settings import StackSettings, node_port


def weaviate_services(settings: StackSettings) -> list[ServiceDef]:
    """The Weaviate server (`make weaviate` builds it), or one process per node of a cluster
    (``weaviate-0``, ...: node i on node 0's ports + i x ``weaviate_port_step``, its own data
    directory); a node's health is its readiness probe."""
    if settings.weaviate_nodes == 1:
        ports = {
            f"MEMEX_WEAVIATE_{kind.upper()}_PORT": str(getattr(settings, f"weaviate_{kind}_port"))
            for kind in ("gossip", "data", "raft", "raft_rpc")
        }
        return [_weaviate_node(settings, "weaviate", 0, settings.weaviate_dir / "data", ports)]
    peers = ",".join(
        f"node{i}:{node_port(settings, 'gossip', i)}:{node_port(settings, 'raft', i)}"
        for i in range(settings.weaviate_nodes)
    )
    return [
        _weaviate_node(
            settings,
            f"weaviate-{i}",
            i,
            settings.weaviate_dir / f"node{i}",
            {
                "MEMEX_WEAVIATE_NODE_NAME": f"node{i}",
                "MEMEX_WEAVIATE_PEERS": peers,
                "MEMEX_WEAVIATE_GOSSIP_PORT": str(node_port(settings, "gossip", i)),
                "MEMEX_WEAVIATE_DATA_PORT": str(node_port(settings, "data", i)),
                "MEMEX_WEAVIATE_RAFT_PORT": str(node_port(settings, "raft", i)),
                # On one host Weaviate finds a peer's Raft RPC port at its Raft port + 1.
                "MEMEX_WEAVIATE_RAFT_RPC_PORT": str(node_port(settings, "raft", i) + 1),
            },
        )
        for i in range(settings.weaviate_nodes)
    ]


def _weaviate_node(
    settings: StackSettings, name: str, node: int, data_dir: Path, extra: dict[str, str]
) -> ServiceDef:
    """One Weaviate process; ``extra`` is its cluster (or single-node) ports and peers."""
    host, port = settings.host, node_port(settings, "http", node)
    return ServiceDef(
        name=name,
        module="memex.retrieval.weaviate_server",
        address=f"{host}:{port}",
        health_service="",
        health_url=f"http://{host}:{port}/v1/.well-known/ready",
        env={
            "MEMEX_WEAVIATE_HOST": host,
            "MEMEX_WEAVIATE_HTTP_PORT": str(port),
            "MEMEX_WEAVIATE_GRPC_PORT": str(node_port(settings, "grpc", node)),
            "MEMEX_WEAVIATE_DATA_DIR": str(data_dir),
            "MEMEX_WEAVIATE_API_KEY": settings.weaviate_api_key(),
            **extra,
        },
        # Raft waits for every voter, so a cluster's nodes start together, then are checked.
        group="weaviate" if settings.weaviate_nodes > 1 else "",
    )


REPLICATION_FACTOR = 3
"""Copies of memex's collections on a cluster: any one node can go, a QUORUM (2) remains."""


def retrieval_store_env(settings: StackSettings) -> dict[str, str]:
    """The retrieval service's backend settings (``MEMEX_RETRIEVAL_STORE`` and, for Weaviate,
    where it runs, its key, and on a cluster the other nodes and the replication factor)."""
    if settings.store != "weaviate":
        return {"MEMEX_RETRIEVAL_STORE": settings.store}
    env = {
        "MEMEX_RETRIEVAL_STORE": "weaviate",
        "MEMEX_RETRIEVAL_WEAVIATE_HOST": settings.host,
        "MEMEX_RETRIEVAL_WEAVIATE_HTTP_PORT": str(settings.weaviate_http_port),
        "MEMEX_RETRIEVAL_WEAVIATE_GRPC_PORT": str(settings.weaviate_grpc_port),
        "MEMEX_RETRIEVAL_WEAVIATE_API_KEY": settings.weaviate_api_key(),
    }
    if settings.weaviate_nodes > 1:
        others = range(1, settings.weaviate_nodes)
        env["MEMEX_RETRIEVAL_WEAVIATE_NODES"] = ",".join(
            f"{settings.host}:{node_port(settings, 'http', i)}:{node_port(settings, 'grpc', i)}"
            for i in others
        )
        env["MEMEX_RETRIEVAL_WEAVIATE_REPLICATION_FACTOR"] = str(REPLICATION_FACTOR)
    return env

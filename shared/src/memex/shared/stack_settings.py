"""The local stack's settings (``MEMEX_...``): which ports each process listens on, where its data
lives, which store and state it runs with.

Read by the `memex` command and its supervisor (``memex.cli.stack``, which turns these settings
into each service's own environment), by the MCP server (the orchestrator's address) and by tests,
so all of them agree on addresses. A Weaviate cluster node's ports are node 0's plus its offset
(``node_port``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memex.shared.pgcluster import DATABASE, SUPERUSER
from memex.shared.settings import default_data_dir

ROOT_POSTGRES_DIRS = Path("/var/lib/memex/postgres")
"""Where root's `memex up --state postgres` keeps its clusters (see ``postgres_dir``)."""


class StackSettings(BaseSettings):
    """Settings of the whole local stack (``MEMEX_...``)."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_")

    host: str = Field("127.0.0.1", description="Address every service binds to.")
    data_dir: Path = Field(default_factory=default_data_dir, description="State, logs, pid files.")
    embedding_port: int = Field(50051, ge=1, le=65535, description="Embedding gRPC port.")
    embedding_metrics_port: int = Field(9151, ge=1, le=65535, description="Embedding /metrics.")
    orchestrator_port: int = Field(50054, ge=1, le=65535, description="Orchestrator gRPC port.")
    orchestrator_metrics_port: int = Field(
        9154, ge=1, le=65535, description="Orchestrator /metrics."
    )
    worker_port: int = Field(
        50055, ge=1, le=65535, description="Chat worker's gRPC health port (it takes no calls)."
    )
    worker_metrics_port: int = Field(9155, ge=1, le=65535, description="Chat worker /metrics.")
    retrieval_port: int = Field(50052, ge=1, le=65535, description="Retrieval gRPC port.")
    retrieval_metrics_port: int = Field(9152, ge=1, le=65535, description="Retrieval /metrics.")
    reasoner_port: int = Field(50053, ge=1, le=65535, description="Reasoner gRPC port.")
    reasoner_metrics_port: int = Field(9153, ge=1, le=65535, description="Reasoner /metrics.")
    gateway_port: int = Field(8765, ge=1, le=65535, description="HTTP gateway port.")
    supervisor_metrics_port: int = Field(
        9150, ge=1, le=65535, description="The supervisor's /metrics (restarts, services up)."
    )
    prometheus_port: int = Field(
        9090, ge=1, le=65535, description="Where `memex observe` runs Prometheus (not the stack)."
    )
    store: Literal["embedded", "weaviate"] = Field(
        "embedded", description="Retrieval backend; weaviate also runs a Weaviate server."
    )
    state: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description="The orchestrator's state: sqlite (a file in the data dir), or postgres: a "
        "local PostgreSQL the stack runs (or MEMEX_ORCHESTRATOR_STATE_URL's, when set).",
    )
    postgres_port: int = Field(54329, ge=1, le=65535, description="Local PostgreSQL's port.")
    postgres_health_port: int = Field(
        50058, ge=1, le=65535, description="Local PostgreSQL launcher's gRPC health port."
    )
    weaviate_http_port: int = Field(8079, ge=1, le=65535, description="Weaviate REST port.")
    weaviate_grpc_port: int = Field(50059, ge=1, le=65535, description="Weaviate gRPC port.")
    weaviate_gossip_port: int = Field(7946, ge=1, le=65535, description="Weaviate gossip port.")
    weaviate_data_port: int = Field(7947, ge=1, le=65535, description="Weaviate cluster data port.")
    weaviate_raft_port: int = Field(8300, ge=1, le=65534, description="Weaviate Raft port.")
    weaviate_raft_rpc_port: int = Field(
        8301, ge=1, le=65535, description="Weaviate Raft RPC port (a cluster uses Raft + 1)."
    )
    weaviate_nodes: int = Field(
        1,
        ge=1,
        le=9,
        description="Weaviate nodes: 1, or a cluster of 3 or more with replication factor 3.",
    )
    weaviate_port_step: int = Field(
        10, ge=2, le=1000, description="Node i of a cluster listens on node 0's ports + i x step."
    )
    start_timeout_seconds: float = Field(
        180.0, gt=0, description="How long `memex up` waits for every service to be healthy."
    )
    restart_backoff_max_seconds: float = Field(
        30.0, gt=0, description="Longest wait before restarting a service that keeps crashing."
    )

    @model_validator(mode="after")
    def _cluster_size(self) -> StackSettings:
        if self.weaviate_nodes == 2:
            raise ValueError(
                "MEMEX_WEAVIATE_NODES=2 cannot lose a node (a quorum of 2 is both): use 1, or 3 "
                "or more"
            )
        return self

    @model_validator(mode="after")
    def _distinct_ports(self) -> StackSettings:
        # Two services on one port: the second fails to bind and `memex up` fails with a crash
        # in its log rather than a sentence naming the two settings.
        chosen_by: dict[int, str] = {}
        ports = {**self.listening_ports(), "MEMEX_PROMETHEUS_PORT": self.prometheus_port}
        for setting, port in ports.items():
            if port in chosen_by:
                raise ValueError(
                    f"{chosen_by[port]} and {setting} are both {port}: give each its own port"
                )
            chosen_by[port] = setting
        return self

    def listening_ports(self) -> dict[str, int]:
        """Every port the stack listens on, keyed by the setting that chooses it; a cluster
        node's ports are node 0's plus its offset (``... + 2 x MEMEX_WEAVIATE_PORT_STEP``)."""
        # Prometheus is not the stack's: `memex observe` runs it beside a running stack, so a
        # Prometheus still up must not make `memex up` find its own port busy.
        ports = {
            f"MEMEX_{name.upper()}": int(getattr(self, name))
            for name in type(self).model_fields
            if name.endswith("_port")
            and not name.startswith(("weaviate_", "postgres_"))
            and name != "prometheus_port"
        }
        if self.runs_postgres:
            ports["MEMEX_POSTGRES_PORT"] = self.postgres_port
            ports["MEMEX_POSTGRES_HEALTH_PORT"] = self.postgres_health_port
        if self.store != "weaviate":
            return ports
        kinds = ("http", "grpc", "gossip", "data", "raft", "raft_rpc")
        if self.weaviate_nodes == 1:
            for kind in kinds:
                ports[f"MEMEX_WEAVIATE_{kind.upper()}_PORT"] = int(
                    getattr(self, f"weaviate_{kind}_port")
                )
            return ports
        for node in range(self.weaviate_nodes):
            offset = f" + {node} x MEMEX_WEAVIATE_PORT_STEP" if node else ""
            for kind in kinds:
                # On one host Weaviate finds a peer's Raft RPC port at its Raft port + 1.
                port = (
                    node_port(self, "raft", node) + 1
                    if kind == "raft_rpc"
                    else node_port(self, kind, node)
                )
                ports[f"MEMEX_WEAVIATE_{kind.upper()}_PORT{offset}"] = port
        return ports

    @property
    def runs_postgres(self) -> bool:
        """Whether the stack runs its own PostgreSQL: state=postgres and no
        MEMEX_ORCHESTRATOR_STATE_URL naming another."""
        return self.state == "postgres" and not os.environ.get("MEMEX_ORCHESTRATOR_STATE_URL")

    @property
    def postgres_dir(self) -> Path:
        """The local PostgreSQL cluster's folder: in the data dir, except for root, whose
        PostgreSQL runs as ``nobody`` (it refuses root) and so needs a folder nobody can reach
        (root's home is closed to it): /var/lib/memex/postgres/<a hash of the data dir>."""
        if os.geteuid() != 0:
            return self.data_dir / "postgres"
        digest = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:12]
        return ROOT_POSTGRES_DIRS / digest

    @property
    def postgres_url(self) -> str:
        """The local PostgreSQL's memex database (trust auth, loopback only)."""
        return f"postgresql://{SUPERUSER}@{self.host}:{self.postgres_port}/{DATABASE}"

    @property
    def run_dir(self) -> Path:
        """Supervisor pid and state files."""
        return self.data_dir / "run"

    @property
    def log_dir(self) -> Path:
        """One log file per service."""
        return self.data_dir / "logs"

    @property
    def orchestrator_addr(self) -> str:
        """Address of the orchestrator."""
        return f"{self.host}:{self.orchestrator_port}"

    @property
    def weaviate_dir(self) -> Path:
        """Weaviate's data (and its API key file) when the stack runs it."""
        return self.data_dir / "weaviate"

    def weaviate_api_key(self) -> str:
        """The stack's Weaviate API key: made once, kept owner-only in the data dir, so the
        server and the retrieval service agree across restarts."""
        path = self.weaviate_dir / "api-key"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
        return path.read_text().strip()

    @property
    def web_url(self) -> str:
        """Where the gateway serves the web chat (and its HTTP API)."""
        return f"http://{self.host}:{self.gateway_port}/"

    @property
    def embedding_addr(self) -> str:
        """Address of the embedding service."""
        return f"{self.host}:{self.embedding_port}"

    @property
    def retrieval_addr(self) -> str:
        """Address of the retrieval service."""
        return f"{self.host}:{self.retrieval_port}"

    @property
    def reasoner_addr(self) -> str:
        """Address of the reasoner service."""
        return f"{self.host}:{self.reasoner_port}"


def node_port(settings: StackSettings, kind: str, node: int) -> int:
    """Node ``node``'s ``kind`` port (http, grpc, gossip, data, raft) in a Weaviate cluster:
    node 0's plus ``node`` x ``weaviate_port_step``."""
    port = int(getattr(settings, f"weaviate_{kind}_port")) + node * settings.weaviate_port_step
    if port > 65535:
        raise ValueError(f"Weaviate node {node}'s {kind} port {port} is beyond 65535")
    return port

"""Runs a real Weaviate server (built from source by `make weaviate`) on loopback.

Two users: the test fixtures start a throwaway server with its own data directory and free ports
(``WeaviateServer``), and `memex up --store weaviate` runs ``python -m
memex.retrieval.weaviate_server``, which replaces itself with the server process (``exec``) so the
supervisor's SIGTERM and parent-death signal reach Weaviate directly. Either way the server gets
API-key auth, no anonymous access, no modules (memex brings its own vectors), no telemetry, no
profiling listener, and cluster/Raft listeners bound to 127.0.0.1.

Weaviate v1.39 has no setting for the listen address of its gRPC API and of its internal cluster
data API: both bind every interface. The first refuses any request without the API key; the
second is closed with cluster basic auth (a secret derived from the key).

A cluster is several such processes, each with its own ports and data directory, that know each
other as peers (``weaviate_peers``); every node of one cluster shares the API key, hence the
cluster secret. ``memex.testing.weaviate_cluster`` starts one for tests; `memex up --store
weaviate --nodes 3` runs one launcher per node.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from memex.retrieval.weaviate_peers import Peer, cluster_env, parse_peers
from memex.shared.errors import FailedPrecondition, InvalidArgument
from memex.shared.settings import default_cache_dir, default_data_dir

WEAVIATE_VERSION = "v1.39.0"
"""The pinned release `make weaviate` builds; the Makefile's WEAVIATE_VERSION must agree."""

READY_PATH = "/v1/.well-known/ready"
API_USER = "memex"


def default_binary() -> Path:
    """Where `make weaviate` caches the server: ``$MEMEX_CACHE_DIR/bin`` (else the user cache)."""
    cache = os.environ.get("MEMEX_CACHE_DIR")
    base = Path(cache) if cache else default_cache_dir()
    return base / "bin" / f"weaviate-server-{WEAVIATE_VERSION}"


def find_binary(explicit: Path | None = None) -> Path:
    """The server binary, or FailedPrecondition saying how to build it."""
    binary = explicit or Path(os.environ.get("MEMEX_WEAVIATE_BINARY") or default_binary())
    if not os.access(binary, os.X_OK):
        raise FailedPrecondition(
            f"no Weaviate server at {binary}: run `make weaviate` to build it from source "
            "(or set MEMEX_WEAVIATE_BINARY)"
        )
    return binary


@dataclass(frozen=True)
class WeaviatePorts:
    """Every port one Weaviate node listens on."""

    http: int
    grpc: int
    gossip: int
    data: int
    raft: int
    raft_rpc: int

    @classmethod
    def free(cls) -> WeaviatePorts:
        """Six distinct ports that were free a moment ago (held open together while choosing)."""
        with contextlib.ExitStack() as stack:
            ports = []
            for _ in range(6):
                sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                sock.bind(("127.0.0.1", 0))
                ports.append(sock.getsockname()[1])
        return cls(*ports)


def server_command(binary: Path, host: str, ports: WeaviatePorts) -> list[str]:
    """The command line of one node serving REST on ``host:ports.http``."""
    return [str(binary), "--host", host, "--port", str(ports.http), "--scheme", "http"]


def server_env(
    data_dir: Path,
    ports: WeaviatePorts,
    api_key: str,
    host: str,
    *,
    node_name: str = "memex",
    peers: Sequence[Peer] = (),
) -> dict[str, str]:
    """The environment of one server (Weaviate reads its config from env): a single node, or
    node ``node_name`` of a cluster when ``peers`` lists more than one."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PERSISTENCE_DATA_PATH": str(data_dir),
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
        "AUTHENTICATION_APIKEY_ENABLED": "true",
        "AUTHENTICATION_APIKEY_ALLOWED_KEYS": api_key,
        "AUTHENTICATION_APIKEY_USERS": API_USER,
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "DISABLE_TELEMETRY": "true",
        "GO_PROFILING_DISABLE": "true",
        "PROMETHEUS_MONITORING_ENABLED": "false",
        "GRPC_PORT": str(ports.grpc),
        "CLUSTER_HOSTNAME": "memex",
        "CLUSTER_BIND_ADDR": host,
        "CLUSTER_GOSSIP_BIND_PORT": str(ports.gossip),
        "CLUSTER_DATA_BIND_PORT": str(ports.data),
        "RAFT_PORT": str(ports.raft),
        "RAFT_INTERNAL_RPC_PORT": str(ports.raft_rpc),
        # The internal data API binds every interface and is open unless cluster basic auth is
        # set; this single node only ever talks to itself, so a secret derived from the key.
        "CLUSTER_BASIC_AUTH_USERNAME": "memex-node",
        "CLUSTER_BASIC_AUTH_PASSWORD": hashlib.sha256(f"cluster:{api_key}".encode()).hexdigest(),
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "RAFT_JOIN": f"memex:{ports.raft_rpc}",
        # A laptop disk is often more than 80% full; Weaviate would turn read-only at 90%.
        "DISK_USE_WARNING_PERCENTAGE": "95",
        "DISK_USE_READONLY_PERCENTAGE": "99",
        "QUERY_DEFAULTS_LIMIT": "25",
        "LOG_LEVEL": os.environ.get("MEMEX_WEAVIATE_LOG_LEVEL", "warning"),
        "LOG_FORMAT": "text",
    }
    if len(peers) > 1:
        env.update(cluster_env(node_name, peers, ports.gossip, ports.raft, ports.raft_rpc))
    return env


def is_ready(url: str, timeout: float = 1.0) -> bool:
    """Whether Weaviate at ``url`` answers its readiness probe (no auth needed) with 2xx."""
    try:
        with urllib.request.urlopen(url + READY_PATH, timeout=timeout) as reply:
            return 200 <= int(reply.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


class StoppedOnExit:
    """Something a ``with`` block brings up and stops on leaving; stopped too when bringing it up
    fails, so a half-started server or cluster leaves no process behind."""

    def bring_up(self) -> None:
        """Starts it and waits until it is ready."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stops it. Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.bring_up()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class WeaviateServer(StoppedOnExit):
    """One throwaway Weaviate process on loopback: ``start()``, ``wait_ready()``, ``stop()``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        binary: Path | None = None,
        api_key: str | None = None,
        ports: WeaviatePorts | None = None,
        log_path: Path | None = None,
        node_name: str = "memex",
        peers: Sequence[Peer] = (),
    ) -> None:
        self.binary = find_binary(binary)
        self.data_dir = data_dir
        self.api_key = api_key or secrets.token_urlsafe(24)
        self.ports = ports or WeaviatePorts.free()
        self.host = "127.0.0.1"
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.node_name = node_name
        self.peers = tuple(peers)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """The REST base URL."""
        return f"http://{self.host}:{self.ports.http}"

    def start(self) -> None:
        """Spawns the server; returns at once (see ``wait_ready``)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            server_command(self.binary, self.host, self.ports),
            env=server_env(
                self.data_dir,
                self.ports,
                self.api_key,
                self.host,
                node_name=self.node_name,
                peers=self.peers,
            ),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Polls the readiness probe; raises RuntimeError with the log's tail if it never comes."""
        assert self._process is not None, "start() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"weaviate exited with {self._process.returncode}:\n{self.log_tail()}"
                )
            if is_ready(self.url):
                return
            time.sleep(0.1)
        raise RuntimeError(f"weaviate not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds. Idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL (a crash), for durability tests."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        self.stop()

    def log_tail(self, lines: int = 30) -> str:
        """The end of the server's log."""
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-lines:])
        except OSError:
            return "(no log)"

    def bring_up(self) -> None:
        """``start()``, then ``wait_ready()``."""
        self.start()
        self.wait_ready()


class WeaviateServerSettings(BaseSettings):
    """The server `memex up --store weaviate` runs (``MEMEX_WEAVIATE_...``)."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_WEAVIATE_")

    binary: Path = Field(default_factory=default_binary, description="weaviate-server binary.")
    data_dir: Path = Field(
        default_factory=lambda: default_data_dir() / "weaviate",
        description="Where Weaviate keeps its data.",
    )
    host: str = Field("127.0.0.1", description="Address the REST API binds to.")
    http_port: int = Field(8079, ge=1, le=65535, description="REST port (readiness probe too).")
    grpc_port: int = Field(50059, ge=1, le=65535, description="gRPC port (the client's queries).")
    gossip_port: int = Field(7946, ge=1, le=65535, description="Cluster gossip port.")
    data_port: int = Field(7947, ge=1, le=65535, description="Cluster data port.")
    raft_port: int = Field(8300, ge=1, le=65535, description="Raft consensus port.")
    raft_rpc_port: int = Field(8301, ge=1, le=65535, description="Raft internal RPC port.")
    api_key: SecretStr = Field(description="The one API key the server accepts.")
    node_name: str = Field("memex", description="This node's name in its cluster.")
    peers: str = Field(
        "",
        description="Every node of the cluster, this one included, as name:gossip_port:raft_port "
        "separated by commas; empty for a single node.",
    )

    @property
    def ports(self) -> WeaviatePorts:
        """The ports as one value."""
        return WeaviatePorts(
            self.http_port,
            self.grpc_port,
            self.gossip_port,
            self.data_port,
            self.raft_port,
            self.raft_rpc_port,
        )


def main() -> None:  # pragma: no cover - replaces the process; covered by the stack e2e test
    """Replaces this process with the configured Weaviate server."""
    settings = WeaviateServerSettings()  # api_key comes from the environment
    try:
        binary = find_binary(settings.binary)
    except FailedPrecondition as exc:
        print(exc.message, file=sys.stderr)
        sys.exit(2)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        peers = parse_peers(settings.peers) if settings.peers else []
        env = server_env(
            settings.data_dir,
            settings.ports,
            settings.api_key.get_secret_value(),
            settings.host,
            node_name=settings.node_name,
            peers=peers,
        )
    except InvalidArgument as exc:
        print(exc.message, file=sys.stderr)
        sys.exit(2)
    os.execve(binary, server_command(binary, settings.host, settings.ports), env)


if __name__ == "__main__":
    main()

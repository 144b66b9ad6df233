"""Prometheus metrics common to every service, and the /metrics endpoint."""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

RPC_HANDLED = Counter(
    "memex_grpc_server_handled_total",
    "RPCs completed, by method and status code.",
    ["method", "code"],
)
RPC_SECONDS = Histogram(
    "memex_grpc_server_handling_seconds",
    "Time from the start of an RPC to its last message.",
    ["method"],
    buckets=LATENCY_BUCKETS,
)
RPC_IN_FLIGHT = Gauge("memex_grpc_server_in_flight", "RPCs being handled now.", ["method"])
INTERNAL_AUTH_REFUSED = Counter(
    "memex_grpc_server_unauthenticated_total",
    "Calls refused for lacking the deployment's internal token (MEMEX_INTERNAL_AUTH=token).",
    ["method"],
)


class MetricsServer:
    """Serves the default registry on its own port, so scraping never competes with gRPC."""

    def __init__(self, host: str, port: int) -> None:
        self._server: WSGIServer
        self._thread: threading.Thread
        self._server, self._thread = start_http_server(port, addr=host)

    @property
    def port(self) -> int:
        """The bound port (useful when 0 was asked for)."""
        return int(self._server.server_port)

    def close(self) -> None:
        """Stops serving and joins the thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

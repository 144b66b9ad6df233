"""The supervisor's own Prometheus metrics: restarts and whether each service is serving.

They live in a registry of their own, served on ``MEMEX_SUPERVISOR_METRICS_PORT``: the
supervisor runs in the CLI's process, whose default registry holds the gateway's metrics.
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server


class SupervisorMetrics:
    """Restart counts and up/down per supervised service, in a dedicated registry."""

    def __init__(self, services: list[str]) -> None:
        self.registry = CollectorRegistry()
        self.restarts = Counter(
            "memex_supervisor_restarts_total",
            "Times the supervisor restarted a service after it exited.",
            ["service"],
            registry=self.registry,
        )
        self.service_up = Gauge(
            "memex_supervisor_service_up",
            "1 while a service's health probe answers SERVING, else 0.",
            ["service"],
            registry=self.registry,
        )
        for name in services:  # every service appears (at 0) before its first restart
            self.restarts.labels(name)
            self.service_up.labels(name).set(0)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def restarted(self, service: str) -> None:
        """Counts one restart of ``service``."""
        self.restarts.labels(service).inc()

    def status(self, service: str, status: str) -> None:
        """Records ``service``'s latest health status (SERVING is up)."""
        self.service_up.labels(service).set(1 if status == "SERVING" else 0)

    def serve(self, host: str, port: int) -> int:
        """Serves /metrics on ``host:port`` in a thread; returns the bound port."""
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        return int(self._server.server_port)

    def close(self) -> None:
        """Stops serving (a no-op when not serving)."""
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
        self._server = self._thread = None

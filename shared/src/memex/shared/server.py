"""The gRPC server lifecycle every memex service shares.

start → health NOT_SERVING while the engine loads → SERVING → SIGTERM → NOT_SERVING →
``server.stop(grace)`` drains in-flight calls → the engine's context manager closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from memex.shared import internal_auth
from memex.shared.errors import Unavailable
from memex.shared.interceptors import CallInterceptor
from memex.shared.logs import configure_logging
from memex.shared.metrics import MetricsServer
from memex.shared.settings import InternalAuthSettings, ServiceSettings

log = logging.getLogger(__name__)

T = TypeVar("T")
S = TypeVar("S", bound=ServiceSettings)

MIN_PING_INTERVAL_MS = 20_000
"""The shortest interval between a client's pings that servers accept (below
``client.KEEPALIVE_TIME_MS``, so memex's own channels are never refused)."""


class EngineSlot(Generic[T]):
    """Holds a service's engine once loaded. Servicers are registered before the server starts
    (gRPC requires it), so they take the engine from here and answer UNAVAILABLE until it loads."""

    def __init__(self, stage: str) -> None:
        self._stage = stage
        self._engine: T | None = None

    def get(self) -> T:
        """The loaded engine; Unavailable while loading or after shutdown began."""
        if self._engine is None:
            raise Unavailable(
                f"the {self._stage} service is not ready (loading or stopping); retry"
            )
        return self._engine

    def set(self, engine: T | None) -> None:
        """Installs (or, with None, removes) the engine."""
        self._engine = engine


@dataclass
class RunningServer:
    """What a started service exposes to its owner (tests use the bound ports)."""

    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    metrics_port: int | None
    service_names: list[str]
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def stop(self) -> None:
        """Asks the service to shut down gracefully (what SIGTERM does)."""
        self.stopping.set()


class GrpcService(Generic[T]):
    """Runs one memex service: its servicers, standard health, reflection and metrics.

    ``register`` adds the servicers (which read the engine from the slot); ``load`` is an async
    context manager that loads the engine and always closes it. ``auth`` is how callers must
    prove they belong to the deployment (default: ``MEMEX_INTERNAL_*`` from the environment).
    """

    def __init__(
        self,
        settings: ServiceSettings,
        services: Sequence[ServiceDescriptor],
        register: Callable[[grpc.aio.Server, EngineSlot[T]], None],
        load: Callable[[], AbstractAsyncContextManager[T]],
        auth: InternalAuthSettings | None = None,
    ) -> None:
        self._settings = settings
        self._auth = auth
        self._names = [service.full_name for service in services]
        self._register = register
        self._load = load
        self.slot: EngineSlot[T] = EngineSlot(self._names[0].split(".")[1] if self._names else "")
        self.started: asyncio.Future[RunningServer] = asyncio.get_running_loop().create_future()

    async def run(self, *, handle_signals: bool = True) -> None:
        """Serves until SIGTERM/SIGINT (or ``RunningServer.stop``), then drains and closes."""
        settings = self._settings
        options = [
            ("grpc.max_send_message_length", settings.max_message_bytes),
            ("grpc.max_receive_message_length", settings.max_message_bytes),
            ("grpc.so_reuseport", 0),
            # memex's clients ping every 30 s even when idle. gRPC's server default accepts an
            # idle ping only every 5 min and answers the third early one with GOAWAY
            # "too_many_pings", which failed an ask that started just then.
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", MIN_PING_INTERVAL_MS),
        ]
        auth = self._auth or internal_auth.from_env()
        server = grpc.aio.server(
            interceptors=[*internal_auth.server_interceptors(auth), CallInterceptor()],
            options=options,
        )
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable_server_reflection(
            [
                *self._names,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            server,
        )
        self._register(server, self.slot)
        address = f"{settings.host}:{settings.port}"
        credentials = internal_auth.server_credentials(auth)
        port = (
            server.add_secure_port(address, credentials)
            if credentials is not None
            else server.add_insecure_port(address)
        )
        if port == 0:
            raise OSError(f"could not bind {settings.host}:{settings.port}")
        await self._set_health(health_servicer, health_pb2.HealthCheckResponse.NOT_SERVING)

        metrics = None
        if settings.metrics_port is not None:
            metrics = MetricsServer(settings.host, settings.metrics_port)
        running = RunningServer(
            server, health_servicer, port, metrics.port if metrics else None, self._names
        )
        if handle_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, running.stop)

        await server.start()
        log.info("listening on %s:%d (loading; internal auth %s)", settings.host, port, auth.auth)
        self.started.set_result(running)
        try:
            async with self._load() as engine:
                self.slot.set(engine)
                if not running.stopping.is_set():
                    await self._set_health(health_servicer, health_pb2.HealthCheckResponse.SERVING)
                    running.ready.set()
                    log.info("serving %s", ", ".join(self._names))
                await running.stopping.wait()
                log.info("shutting down: draining for up to %.1fs", settings.grace_seconds)
                await health_servicer.enter_graceful_shutdown()
                await server.stop(settings.grace_seconds)
                self.slot.set(None)
        finally:
            await server.stop(None)
            if metrics is not None:
                metrics.close()
            if handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    with contextlib.suppress(Exception):
                        asyncio.get_running_loop().remove_signal_handler(sig)
            log.info("stopped")

    async def _set_health(
        self,
        servicer: health.aio.HealthServicer,
        status: health_pb2.HealthCheckResponse.ServingStatus,
    ) -> None:
        for name in ["", *self._names]:
            await servicer.set(name, status)


def serve(settings: S, build: Callable[[S], GrpcService[Any]]) -> None:
    """A service process's main: configures logging from ``settings`` and runs ``build(settings)``
    until SIGTERM. The service is built inside the event loop, where its gRPC server must be
    made."""
    configure_logging(settings.log_level)

    async def run() -> None:
        await build(settings).run()

    asyncio.run(run())

"""A gateway for tests: the real app on a real uvicorn server, in front of fake orchestrator and
retrieval services (``fakes``) served over real gRPC, all on free loopback ports in one background
event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from memex.gateway.app import create_app
from memex.gateway.config import GatewaySettings
from memex.orchestrator.v1 import orchestrator_pb2, orchestrator_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.server import GrpcService
from memex.shared.settings import ServiceSettings
from memex.testing import serving

from .fakes import FakeOrchestrator, FakeRetrieval


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield None


@dataclass
class Gateway:
    """A running gateway: its base URL, settings and the fakes behind it."""

    url: str
    settings: GatewaySettings
    orchestrator: FakeOrchestrator
    retrieval: FakeRetrieval
    _stop: Callable[[], None] = field(repr=False, default=lambda: None)


def start_gateway(tmp: Path, **overrides: Any) -> tuple[Gateway, threading.Thread]:
    """Starts a gateway (settings ``overrides`` on top of loopback, port 0, keys in ``tmp``)."""
    orchestrator, retrieval = FakeOrchestrator(), FakeRetrieval()
    started: dict[str, Any] = {}
    ready = threading.Event()

    async def main() -> None:
        def register(server: Any, slot: Any) -> None:
            orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(orchestrator, server)
            retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(retrieval, server)

        service: GrpcService[None] = GrpcService(
            ServiceSettings(host="127.0.0.1", port=0),
            [
                orchestrator_pb2.DESCRIPTOR.services_by_name["OrchestratorService"],
                retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"],
            ],
            register,
            _nothing,
        )
        async with serving(service) as running:
            address = f"127.0.0.1:{running.port}"
            given: dict[str, Any] = {
                "host": "127.0.0.1",
                "port": 0,
                "orchestrator_addr": address,
                "retrieval_addr": address,
                "keys_file": tmp / "keys.json",
                **overrides,
            }
            settings = GatewaySettings(**given)
            server = uvicorn.Server(
                uvicorn.Config(
                    create_app(settings),
                    host="127.0.0.1",
                    port=0,
                    log_config=None,
                    access_log=False,
                )
            )
            loop = asyncio.get_running_loop()
            task = asyncio.create_task(server.serve())
            # uvicorn offers no started event to wait on
            while not server.started and not task.done():  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            if server.started:
                started.update(
                    settings=settings,
                    port=server.servers[0].sockets[0].getsockname()[1],
                    stop=lambda: loop.call_soon_threadsafe(setattr, server, "should_exit", True),
                )
            ready.set()
            await task

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    if not ready.wait(30) or "port" not in started:
        raise RuntimeError("the gateway did not start")
    gateway = Gateway(
        url=f"http://127.0.0.1:{started['port']}",
        settings=started["settings"],
        orchestrator=orchestrator,
        retrieval=retrieval,
        _stop=started["stop"],
    )
    return gateway, thread


@contextlib.contextmanager
def running_gateway(tmp: Path, **overrides: Any) -> Iterator[Gateway]:
    """A gateway for the block; stopped (and its thread joined) afterwards."""
    gateway, thread = start_gateway(tmp, **overrides)
    try:
        yield gateway
    finally:
        gateway._stop()
        thread.join(30)


def read_events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """A server-sent event stream's lines as (event, JSON data) per event, and ("comment", text)
    per comment line."""
    event = None
    for line in lines:
        if line.startswith(":"):
            yield "comment", line[1:].strip()
        elif line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            assert event is not None, "data without a named event"
            yield event, json.loads(line[len("data: ") :])
            event = None

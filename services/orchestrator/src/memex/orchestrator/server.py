"""Builds the orchestrator service on the shared gRPC lifecycle."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import grpc

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.metrics import queue_metrics
from memex.orchestrator.service import Orchestrator, open_orchestrator
from memex.orchestrator.v1 import orchestrator_pb2, orchestrator_pb2_grpc
from memex.orchestrator.wire.servicer import OrchestratorServicer
from memex.shared.server import EngineSlot, GrpcService

SERVICE = orchestrator_pb2.DESCRIPTOR.services_by_name["OrchestratorService"]


def build(settings: OrchestratorSettings) -> GrpcService[Orchestrator]:
    """The orchestrator service, ready to ``run()``."""

    def register(server: grpc.aio.Server, slot: EngineSlot[Orchestrator]) -> None:
        orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(
            OrchestratorServicer(slot), server
        )

    return GrpcService(settings, [SERVICE], register, lambda: _open(settings))


@contextlib.asynccontextmanager
async def _open(settings: OrchestratorSettings) -> AsyncIterator[Orchestrator]:
    """The orchestrator, exporting the turn queue's backlog while it runs. Only the service
    exports it, not the chat workers: they share its database, and one series is one queue."""
    async with open_orchestrator(settings) as orchestrator:
        with queue_metrics(orchestrator.store.pending_turns):
            yield orchestrator

"""The gateway's gRPC channels to the orchestrator and the retrieval service.

Channels come from ``memex.shared.client.open_channel``, so every call carries the request id of
the HTTP request (set in a ContextVar by the middleware) and a deadline; read-only methods are
retried on UNAVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc

from memex.gateway.config import GatewaySettings
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.retrieval.v1 import retrieval_pb2_grpc
from memex.shared.client import open_channel

if TYPE_CHECKING:  # the async stub types exist only in the generated .pyi
    from memex.orchestrator.v1.orchestrator_pb2_grpc import OrchestratorServiceAsyncStub
    from memex.retrieval.v1.retrieval_pb2_grpc import RetrievalServiceAsyncStub

ORCHESTRATOR_READS = (
    "Search",
    "ListConversations",
    "GetConversation",
    "GetTurn",
    "ListThreads",
    "ListTurns",
    "ListPersonas",
)
RETRIEVAL_READS = ("QueryRecords", "PersonTimeline", "ListInbox", "GetNote")


@dataclass
class Clients:
    """Open channels and their stubs; ``close`` ends them (on shutdown)."""

    orchestrator_channel: grpc.aio.Channel
    retrieval_channel: grpc.aio.Channel
    orchestrator: OrchestratorServiceAsyncStub
    retrieval: RetrievalServiceAsyncStub

    async def close(self) -> None:
        """Closes both channels, cancelling calls still running."""
        await self.orchestrator_channel.close()
        await self.retrieval_channel.close()


def open_clients(settings: GatewaySettings) -> Clients:
    """Channels to the services named in the settings (they connect lazily, on first call)."""
    orchestrator = open_channel(
        settings.orchestrator_addr,
        service="memex.orchestrator.v1.OrchestratorService",
        idempotent_methods=ORCHESTRATOR_READS,
        default_timeout=settings.request_timeout_seconds,
    )
    retrieval = open_channel(
        settings.retrieval_addr,
        service="memex.retrieval.v1.RetrievalService",
        idempotent_methods=RETRIEVAL_READS,
        default_timeout=settings.request_timeout_seconds,
    )
    return Clients(
        orchestrator_channel=orchestrator,
        retrieval_channel=retrieval,
        orchestrator=orchestrator_pb2_grpc.OrchestratorServiceStub(orchestrator),
        retrieval=retrieval_pb2_grpc.RetrievalServiceStub(retrieval),
    )

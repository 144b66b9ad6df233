"""The gateway's gRPC channel to the orchestrator, its one door to memory (issue 11).

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
from memex.shared.client import open_channel

if TYPE_CHECKING:  # the async stub types exist only in the generated .pyi
    from memex.orchestrator.v1.orchestrator_pb2_grpc import OrchestratorServiceAsyncStub

ORCHESTRATOR_READS = (
    "Search",
    "QueryRecords",
    "PersonTimeline",
    "ListInbox",
    "GetNote",
    "ListConversations",
    "GetConversation",
    "GetTurn",
    "ListThreads",
    "ListTurns",
    "ListPersonas",
    "GetEvidence",
)


@dataclass
class Clients:
    """The open channel and its stub; ``close`` ends it (on shutdown)."""

    orchestrator_channel: grpc.aio.Channel
    orchestrator: OrchestratorServiceAsyncStub

    async def close(self) -> None:
        """Closes the channel, cancelling calls still running."""
        await self.orchestrator_channel.close()


def open_clients(settings: GatewaySettings) -> Clients:
    """A channel to the orchestrator named in the settings (it connects lazily, on first call)."""
    orchestrator = open_channel(
        settings.orchestrator_addr,
        service="memex.orchestrator.v1.OrchestratorService",
        idempotent_methods=ORCHESTRATOR_READS,
        default_timeout=settings.request_timeout_seconds,
    )
    return Clients(
        orchestrator_channel=orchestrator,
        orchestrator=orchestrator_pb2_grpc.OrchestratorServiceStub(orchestrator),
    )

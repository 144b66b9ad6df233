"""Builds the reasoner service on the shared gRPC lifecycle."""

from __future__ import annotations

import grpc

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.core import ReasonerCore
from memex.reasoner.factory import open_core
from memex.reasoner.servicer import ReasonerServicer
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.server import EngineSlot, GrpcService

SERVICE = reasoner_pb2.DESCRIPTOR.services_by_name["ReasonerService"]


def build(settings: ReasonerSettings) -> GrpcService[ReasonerCore]:
    """The reasoner service, ready to ``run()``."""

    def register(server: grpc.aio.Server, slot: EngineSlot[ReasonerCore]) -> None:
        reasoner_pb2_grpc.add_ReasonerServiceServicer_to_server(ReasonerServicer(slot), server)

    return GrpcService(settings, [SERVICE], register, lambda: open_core(settings))

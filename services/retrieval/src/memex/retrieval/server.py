"""Builds the retrieval service on the shared gRPC lifecycle."""

from __future__ import annotations

import grpc

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.core import RetrievalCore, open_core
from memex.retrieval.servicer import RetrievalServicer
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.server import EngineSlot, GrpcService

SERVICE = retrieval_pb2.DESCRIPTOR.services_by_name["RetrievalService"]


def build(settings: RetrievalSettings) -> GrpcService[RetrievalCore]:
    """The retrieval service, ready to ``run()``."""

    def register(server: grpc.aio.Server, slot: EngineSlot[RetrievalCore]) -> None:
        retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(RetrievalServicer(slot), server)

    return GrpcService(settings, [SERVICE], register, lambda: open_core(settings))

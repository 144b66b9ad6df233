"""Builds the embedding service on the shared gRPC lifecycle."""

from __future__ import annotations

import grpc

from memex.embedding.config import EmbeddingSettings
from memex.embedding.core import EmbeddingCore, open_core
from memex.embedding.servicer import EmbeddingServicer
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.server import EngineSlot, GrpcService

SERVICE = embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"]


def build(settings: EmbeddingSettings) -> GrpcService[EmbeddingCore]:
    """The embedding service, ready to ``run()``."""

    def register(server: grpc.aio.Server, slot: EngineSlot[EmbeddingCore]) -> None:
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(EmbeddingServicer(slot), server)

    return GrpcService(settings, [SERVICE], register, lambda: open_core(settings))

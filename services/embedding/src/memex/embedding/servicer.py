"""Proto ⇄ domain translation for the embedding service."""

from __future__ import annotations

from typing import Any

import grpc

from memex.embedding.core import EmbeddingCore, Kind
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.server import EngineSlot

_KINDS: dict[int, Kind] = {
    embedding_pb2.EMBED_KIND_UNSPECIFIED: "document",
    embedding_pb2.EMBED_KIND_DOCUMENT: "document",
    embedding_pb2.EMBED_KIND_QUERY: "query",
}


class EmbeddingServicer(embedding_pb2_grpc.EmbeddingServiceServicer):
    """Implements memex.embedding.v1.EmbeddingService over an EmbeddingCore."""

    def __init__(self, slot: EngineSlot[EmbeddingCore]) -> None:
        self._slot = slot

    async def Embed(
        self, request: embedding_pb2.EmbedRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> embedding_pb2.EmbedResponse:
        core = self._slot.get()
        result = await core.embed(list(request.texts), _KINDS.get(request.kind, "document"))
        info = core.info
        return embedding_pb2.EmbedResponse(
            embeddings=[
                embedding_pb2.Embedding(values=vector, truncated=truncated, token_count=tokens)
                for vector, truncated, tokens in zip(
                    result.vectors, result.truncated, result.token_counts, strict=True
                )
            ],
            model_id=info.model_id,
            dimension=info.dimension,
        )

    async def Info(
        self, request: embedding_pb2.InfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> embedding_pb2.InfoResponse:
        info = self._slot.get().info
        return embedding_pb2.InfoResponse(
            model_id=info.model_id,
            dimension=info.dimension,
            max_tokens=info.max_tokens,
            max_texts=info.max_texts,
            max_text_chars=info.max_text_chars,
            providers=info.providers,
        )

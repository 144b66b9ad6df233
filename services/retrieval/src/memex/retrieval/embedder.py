"""The retrieval service's view of the embedding service: a small protocol and its gRPC client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

import grpc
import numpy as np
from numpy.typing import NDArray

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.errors import FailedPrecondition, InvalidArgument, Unavailable

if TYPE_CHECKING:
    from memex.retrieval.store.base import MemoryReader

log = logging.getLogger(__name__)
Kind = Literal["query", "document"]
SERVICE = "memex.embedding.v1.EmbeddingService"
# Per-tenant store metadata: the embedding model the tenant's vectors were made with. Written at
# the end of each indexing run, once every note and record carries that model's vectors.
MODEL_META = "embedding-model"


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors."""

    dimension: int
    model_id: str

    async def embed(self, texts: Sequence[str], kind: Kind) -> NDArray[np.float32]:
        """One row per text, in order."""


class GrpcEmbedder:
    """Calls memex.embedding.v1.EmbeddingService, splitting calls at the service's limits."""

    def __init__(
        self, channel: grpc.aio.Channel, info: embedding_pb2.InfoResponse, timeout: float
    ) -> None:
        self._stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        self._timeout = timeout
        self.dimension = info.dimension
        self.model_id = info.model_id
        self.max_texts = max(info.max_texts, 1)
        self.max_chars = max(info.max_text_chars, 1)
        self.seconds = 0.0
        """Wall time spent waiting for embeddings (for the indexing summary)."""

    async def embed(self, texts: Sequence[str], kind: Kind) -> NDArray[np.float32]:
        """Vectors for ``texts``; texts over the service's character limit are cut (the tail of
        a 1,600-character chunk is past the model's token limit anyway)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        wire = (
            embedding_pb2.EMBED_KIND_QUERY if kind == "query" else embedding_pb2.EMBED_KIND_DOCUMENT
        )
        clipped = [t[: self.max_chars] for t in texts]
        started = time.perf_counter()
        try:
            replies = await asyncio.gather(
                *(
                    self._stub.Embed(
                        embedding_pb2.EmbedRequest(
                            texts=clipped[i : i + self.max_texts], kind=wire
                        ),
                        timeout=self._timeout,
                    )
                    for i in range(0, len(clipped), self.max_texts)
                )
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise InvalidArgument(
                    f"the embedding service refused the text: {exc.details()}"
                ) from exc
            raise Unavailable(
                f"the embedding service is unavailable ({exc.code().name}); retry"
            ) from exc
        finally:
            self.seconds += time.perf_counter() - started
        rows = [list(e.values) for reply in replies for e in reply.embeddings]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)


@contextlib.asynccontextmanager
async def open_embedder(address: str, timeout: float, wait_s: float) -> AsyncIterator[GrpcEmbedder]:
    """Connects to the embedding service, waiting up to ``wait_s`` for it to come up (the stack
    starts it first, but it may still be loading its model)."""
    channel = open_channel(
        address, service=SERVICE, idempotent_methods=["Embed", "Info"], default_timeout=timeout
    )
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                info = await embedding_pb2_grpc.EmbeddingServiceStub(channel).Info(
                    embedding_pb2.InfoRequest(), timeout=5, wait_for_ready=True
                )
                break
            except grpc.aio.AioRpcError as exc:
                if time.monotonic() > deadline:
                    raise Unavailable(
                        f"the embedding service at {address} did not answer ({exc.code().name})"
                    ) from exc
                log.info("waiting for the embedding service at %s", address)
                await asyncio.sleep(0.5)
        yield GrpcEmbedder(channel, info, timeout)
    finally:
        await channel.close()


async def check_model(store: MemoryReader, tenant: str, model_id: str) -> None:
    """FailedPrecondition if the tenant's vectors were made by another embedding model: a query
    vector of one model compared with another's document vectors ranks nonsense, silently.
    A tenant indexed before the model was recorded passes (its next run records it)."""
    indexed_with = await store.get_meta(tenant, MODEL_META)
    if indexed_with and indexed_with != model_id:
        raise FailedPrecondition(
            f"tenant {tenant!r} was indexed with the embedding model {indexed_with!r} but the "
            f"embedding service runs {model_id!r}, and vectors of different models cannot be "
            "compared: re-index (`memex index VAULT` re-embeds every note and record) or set "
            "MEMEX_EMBEDDING_MODEL back to the model it was indexed with"
        )

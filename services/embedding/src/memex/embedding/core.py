"""The embedding service's domain logic: validation, prefixes, batching (no gRPC imports)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

from memex.embedding.batcher import DynamicBatcher
from memex.embedding.config import EmbeddingSettings
from memex.embedding.engine import EmbedResult, OnnxEmbedder, resolve_providers
from memex.shared.errors import InvalidArgument

Kind = Literal["query", "document"]


@dataclass(frozen=True)
class ModelInfo:
    """What clients learn about the loaded model."""

    model_id: str
    dimension: int
    max_tokens: int
    max_texts: int
    max_text_chars: int
    providers: list[str]


class EmbeddingCore:
    """Checks requests against the limits and embeds them through the dynamic batcher."""

    def __init__(
        self, settings: EmbeddingSettings, embedder: OnnxEmbedder, batcher: DynamicBatcher
    ):
        self._settings = settings
        self._batcher = batcher
        self.info = ModelInfo(
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            max_tokens=embedder.max_tokens,
            max_texts=settings.max_texts,
            max_text_chars=settings.max_text_chars,
            providers=list(embedder.providers),
        )

    async def embed(self, texts: Sequence[str], kind: Kind) -> EmbedResult:
        """Embeds ``texts`` (an empty string is a valid text); InvalidArgument past the limits."""
        limits = self._settings
        if not texts:
            raise InvalidArgument(
                "texts is empty: send at least one text (an empty string is fine)"
            )
        if len(texts) > limits.max_texts:
            raise InvalidArgument(
                f"too many texts: {len(texts)} in one call, the limit is {limits.max_texts}; "
                "split the call"
            )
        for index, text in enumerate(texts):
            if len(text) > limits.max_text_chars:
                raise InvalidArgument(
                    f"texts[{index}] has {len(text)} characters, the limit is "
                    f"{limits.max_text_chars}; split it into chunks first"
                )
        prefix = limits.query_prefix if kind == "query" else limits.document_prefix
        if prefix:
            texts = [prefix + text for text in texts]
        return await self._batcher.embed(texts)


def load_embedder(settings: EmbeddingSettings) -> OnnxEmbedder:
    """The ONNX model the settings name, with their pooling, token limit and threads."""
    return OnnxEmbedder(
        settings.model_dir,
        model_id=settings.model_id,
        max_tokens=settings.max_tokens,
        pooling=settings.pooling,
        normalize=settings.normalize,
        batch_size=settings.max_batch_texts,
        providers=resolve_providers(settings.device),
        intra_op_threads=settings.intra_op_threads,
        spin_wait=settings.spin_wait,
    )


@contextlib.asynccontextmanager
async def open_core(settings: EmbeddingSettings) -> AsyncIterator[EmbeddingCore]:
    """Loads the model (off the event loop, so health answers meanwhile) and starts batching."""
    embedder = await asyncio.to_thread(load_embedder, settings)
    async with DynamicBatcher(
        embedder.embed,
        max_batch_texts=settings.max_batch_texts,
        max_wait_s=settings.max_wait_ms / 1000,
        max_queue_texts=settings.max_queue_texts,
    ) as batcher:
        yield EmbeddingCore(settings, embedder, batcher)

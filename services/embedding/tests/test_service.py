"""The embedding service over real gRPC on a free port, with the real model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from memex.embedding.catalogue import DEFAULT_MODEL, lookup
from memex.embedding.config import EmbeddingSettings
from memex.embedding.server import build
from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.testing import serving


@pytest.fixture
async def stub(model_dir: Path) -> AsyncIterator[embedding_pb2_grpc.EmbeddingServiceAsyncStub]:
    settings = EmbeddingSettings(
        port=0, model_dir=model_dir, max_texts=8, max_text_chars=100, query_prefix="q: "
    )
    async with (
        serving(build(settings)) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        yield embedding_pb2_grpc.EmbeddingServiceStub(channel)


async def test_embed_returns_one_vector_per_text_in_order(
    stub: embedding_pb2_grpc.EmbeddingServiceAsyncStub,
) -> None:
    reply = await stub.Embed(embedding_pb2.EmbedRequest(texts=["alpha", "", "gamma"]))
    assert reply.model_id == lookup(DEFAULT_MODEL).model_id
    assert reply.dimension == 384
    assert len(reply.embeddings) == 3
    assert all(len(e.values) == 384 for e in reply.embeddings)
    assert reply.embeddings[1].token_count == 2


async def test_query_kind_applies_the_query_prefix(
    stub: embedding_pb2_grpc.EmbeddingServiceAsyncStub,
) -> None:
    text = "when is the dentist"
    as_query = await stub.Embed(
        embedding_pb2.EmbedRequest(texts=[text], kind=embedding_pb2.EMBED_KIND_QUERY)
    )
    as_doc = await stub.Embed(embedding_pb2.EmbedRequest(texts=[text]))
    prefixed = await stub.Embed(embedding_pb2.EmbedRequest(texts=["q: " + text]))
    q, d, p = (np.array(r.embeddings[0].values) for r in (as_query, as_doc, prefixed))
    assert float(q @ p) > 0.9999
    assert float(q @ d) < 0.9999


async def test_info_describes_the_model_and_limits(
    stub: embedding_pb2_grpc.EmbeddingServiceAsyncStub,
) -> None:
    info = await stub.Info(embedding_pb2.InfoRequest())
    assert (info.dimension, info.max_tokens, info.max_texts, info.max_text_chars) == (
        384,
        256,
        8,
        100,
    )
    assert list(info.providers) == ["CPUExecutionProvider"]


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ([], "texts is empty"),
        (["x"] * 9, "too many texts: 9"),
        (["ok", "y" * 101], "texts[1] has 101 characters"),
    ],
)
async def test_bad_input_is_invalid_argument_saying_what_to_fix(
    stub: embedding_pb2_grpc.EmbeddingServiceAsyncStub, texts: list[str], message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.Embed(embedding_pb2.EmbedRequest(texts=texts))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (info.value.details() or "")

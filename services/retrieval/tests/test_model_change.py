"""Changing the embedding model: a store is never searched with another model's query vectors;
re-indexing re-embeds every note and record and lifts the refusal (embedded store, real models)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
from google.protobuf import struct_pb2

from memex.common.v1 import common_pb2
from memex.embedding.catalogue import CATALOGUE, DEFAULT_MODEL, lookup
from memex.embedding.config import EmbeddingSettings
from memex.embedding.server import build as build_embedding
from memex.retrieval.config import RetrievalSettings
from memex.retrieval.embedder import MODEL_META
from memex.retrieval.server import build as build_retrieval
from memex.retrieval.store.embedded.store import EmbeddedStore
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.testing import require, serving

from .test_service import index, search

OTHER = next(name for name in CATALOGUE if name != DEFAULT_MODEL)


@asynccontextmanager
async def stack(
    model: str, store_dir: Path
) -> AsyncIterator[retrieval_pb2_grpc.RetrievalServiceAsyncStub]:
    """An embedding service running ``model`` and a retrieval service on ``store_dir``."""
    require(lookup(model).path() / "model.onnx", "run `make test` (it prepares every model)")
    async with serving(build_embedding(EmbeddingSettings(port=0, model=model))) as embedding:
        settings = RetrievalSettings(
            port=0,
            embedding_addr=f"127.0.0.1:{embedding.port}",
            store_dir=store_dir,
            recency_half_life_days=0,
        )
        async with (
            serving(build_retrieval(settings)) as running,
            grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
        ):
            yield retrieval_pb2_grpc.RetrievalServiceStub(channel)


async def test_another_model_is_refused_until_a_reindex_reembeds_everything(
    vault: Path, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    garden = vault / "projects" / "Garden.md"
    written = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()
    os.utime(garden, (written, written))
    async with stack(DEFAULT_MODEL, store_dir) as first:
        notes = (await index(first, vault)).added
        fields = struct_pb2.Struct()
        fields.update({"name": "Carol Diaz", "kind": "person"})
        await first.UpsertRecords(
            retrieval_pb2.UpsertRecordsRequest(
                records=[retrieval_pb2.Record(collection="entities", id="carol", fields=fields)]
            )
        )
        assert await search(first, "sailing")
        # An edit keeps the earlier version (docs/as-of.md), embedded with this model.
        garden.write_text(garden.read_text().replace("basil", "parsley"))
        assert (await index(first, vault)).updated == 1

    async with stack(OTHER, store_dir) as second:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await search(second, "sailing")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        message = refused.value.details() or ""
        assert lookup(DEFAULT_MODEL).model_id in message and "re-index" in message

        summary = await index(second, vault)
        assert summary.updated == notes and summary.unchanged == 0
        # The kept version was embedded again: a search as of a day it held finds it by vector.
        then = await search(
            second, "basil", as_of="2026-02-01", channels=[common_pb2.CHANNEL_VECTOR], k=50
        )
        assert any("basil" in i.text and i.provenance.episode_id.endswith("@v1") for i in then)
        # The vault's records file and the API record are both embedded again.
        assert summary.records_upserted >= 2
        assert await search(second, "sailing")

    store = await EmbeddedStore.open(store_dir, 384)
    try:
        assert await store.get_meta("default", MODEL_META) == lookup(OTHER).model_id
        assert await store.get_meta("default~history", MODEL_META) == lookup(OTHER).model_id
    finally:
        await store.close()

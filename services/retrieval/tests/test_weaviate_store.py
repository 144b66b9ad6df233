"""Weaviate-only behaviour of the store (the shared behaviour is in tests/contract)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.store.base import Chunk, Note, SearchFilter
from memex.retrieval.store.weaviate import WeaviateStore, open_weaviate_store
from memex.retrieval.weaviate_server import WeaviatePorts, WeaviateServer
from memex.shared.errors import FailedPrecondition, InvalidArgument, Unavailable
from memex.testing.retrieval import record

DIM = 4
ALL = SearchFilter()


def _note(title: str, text: str, vector: list[float], version: str = "1") -> Note:
    note_id = hashlib.sha1(title.encode()).hexdigest()[:12]
    chunk = Chunk(
        id=f"{note_id}#0",
        note_id=note_id,
        ordinal=0,
        text=text,
        heading="",
        start=0,
        end=len(text),
        search_text=text,
        vector=vector,
    )
    return Note(
        id=note_id,
        path=f"{title}.md",
        title=title,
        date="2024-01-01",
        fingerprint=version,
        chunks=(chunk,),
    )


def _kwargs(server: WeaviateServer, **over: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "http_host": server.host,
        "http_port": server.ports.http,
        "grpc_port": server.ports.grpc,
        "api_key": server.api_key,
        "dimension": DIM,
        "prefix": "W" + uuid.uuid4().hex[:12],
    }
    return {**kwargs, **over}


async def test_wrong_dimension_is_a_clear_error(weaviate_server: WeaviateServer) -> None:
    store = await WeaviateStore.connect(**_kwargs(weaviate_server))
    try:
        with pytest.raises(InvalidArgument, match="3 dimensions"):
            await store.upsert_note("t", _note("A", "apples", [1.0, 0.0, 0.0]))
        with pytest.raises(InvalidArgument, match="query vector"):
            await store.search_chunks_vector("t", [1.0], 3, ALL)
        assert await store.note_fingerprints("t") == {}
    finally:
        await store.close()


async def test_wrong_key_and_no_server_are_domain_errors(weaviate_server: WeaviateServer) -> None:
    with pytest.raises(FailedPrecondition, match="API key"):
        await WeaviateStore.connect(**_kwargs(weaviate_server, api_key="wrong"))
    dead = WeaviatePorts.free()
    with pytest.raises(Unavailable, match="not reachable"):
        await WeaviateStore.connect(
            **_kwargs(weaviate_server, http_port=dead.http, grpc_port=dead.grpc)
        )


async def test_settings_without_a_key_are_refused() -> None:
    settings = RetrievalSettings(store="weaviate", weaviate_api_key=None)
    with pytest.raises(FailedPrecondition, match="API_KEY"):
        await open_weaviate_store(settings, DIM)


async def test_schema_creation_is_idempotent_and_race_safe(
    weaviate_server: WeaviateServer,
) -> None:
    kwargs = _kwargs(weaviate_server)
    stores = await asyncio.gather(*(WeaviateStore.connect(**kwargs) for _ in range(3)))
    try:
        await stores[0].upsert_note("t", _note("A", "apples", [1.0, 0.0, 0.0, 0.0]))
        again = await WeaviateStore.connect(**kwargs)
        try:
            assert list(await again.note_fingerprints("t")) == ["A.md"]
        finally:
            await again.close()
    finally:
        for store in stores:
            await store.close()


async def test_any_tenant_name_works_and_stays_apart(weaviate_server: WeaviateServer) -> None:
    store = await WeaviateStore.connect(**_kwargs(weaviate_server))
    try:
        await store.upsert_note("alice@example.com", _note("A", "apples", [1.0, 0, 0, 0]))
        await store.upsert_note("bob@example.com", _note("B", "bananas", [0, 1.0, 0, 0]))
        hits = await store.search_chunks_keyword("alice@example.com", "apples bananas", 5, ALL)
        assert len(hits) == 1
        assert list(await store.note_fingerprints("bob@example.com")) == ["B.md"]
    finally:
        await store.close()


@pytest.mark.slow
async def test_acknowledged_writes_survive_a_server_kill(tmp_path: Path) -> None:
    server = WeaviateServer(tmp_path / "data")
    with server:
        kwargs = _kwargs(server)
        store = await WeaviateStore.connect(**kwargs)
        await store.upsert_note("t", _note("A", "durable apples", [1.0, 0, 0, 0]))
        await store.upsert_records("t", [record("events", "e1", "harvest", vector=[0, 1.0, 0, 0])])
        await store.set_meta("t", "model", "m1")
        await store.close()
        server.kill()
    with WeaviateServer(tmp_path / "data", api_key=server.api_key, ports=server.ports):
        store = await WeaviateStore.connect(**kwargs)
        try:
            assert list(await store.note_fingerprints("t")) == ["A.md"]
            assert len(await store.search_chunks_keyword("t", "apples", 5, ALL)) == 1
            # The vectors too: Weaviate leaves a batch's HNSW log unflushed unless the store
            # flushes it (``_flush_vector_log``); without that, these found nothing 3 runs in 4.
            assert len(await store.search_chunks_vector("t", [1.0, 0, 0, 0], 5, ALL)) == 1
            events = SearchFilter(collections=("events",))
            assert len(await store.search_records_vector("t", [0, 1.0, 0, 0], 5, events)) == 1
            assert await store.get_meta("t", "model") == "m1"
        finally:
            await store.close()

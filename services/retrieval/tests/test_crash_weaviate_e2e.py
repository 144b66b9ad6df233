"""kill -9 of the retrieval service mid-index on the Weaviate backend, then a rerun: every note
once, every chunk once, no stale fingerprints (Weaviate has no transactions; the write order
in ``WeaviateStore.upsert_note`` is what makes this hold)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
import pytest

from memex.retrieval.ingest.chunking import chunk_body
from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.weaviate import WeaviateStore
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.retrieval.weaviate_server import WeaviatePorts, WeaviateServer
from memex.shared.health import wait_until_serving

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400)]
NOTES = 90


def _start(
    server: WeaviateServer, prefix: str, embedding_addr: str, port: int
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMEX_RETRIEVAL_PORT": str(port),
        "MEMEX_RETRIEVAL_EMBEDDING_ADDR": embedding_addr,
        "MEMEX_RETRIEVAL_EMBED_BATCH": "8",
        "MEMEX_RETRIEVAL_STORE": "weaviate",
        "MEMEX_RETRIEVAL_WEAVIATE_HOST": server.host,
        "MEMEX_RETRIEVAL_WEAVIATE_HTTP_PORT": str(server.ports.http),
        "MEMEX_RETRIEVAL_WEAVIATE_GRPC_PORT": str(server.ports.grpc),
        "MEMEX_RETRIEVAL_WEAVIATE_API_KEY": server.api_key,
        "MEMEX_RETRIEVAL_WEAVIATE_COLLECTION_PREFIX": prefix,
    }
    return subprocess.Popen([sys.executable, "-m", "memex.retrieval"], env=env)


async def _index(address: str, vault: Path, stop_after: int | None) -> int:
    await wait_until_serving(address, timeout=120)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        done = 0
        async for message in stub.IndexVault(
            retrieval_pb2.IndexVaultRequest(vault_path=str(vault))
        ):
            done = message.done
            if stop_after is not None and done >= stop_after:
                return done
        return done


async def test_kill_9_mid_index_then_rerun_on_weaviate(
    tmp_path: Path, embedding_addr: str, weaviate_server: WeaviateServer
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    expected_chunks = 0
    for i in range(NOTES):
        body = f"# Note {i}\n" + " ".join(f"topic{i} word{j}" for j in range(40 + i % 150)) + "\n"
        (vault / f"n{i:03d}.md").write_text(body)
        expected_chunks += len(chunk_body(body))
    prefix = "K" + uuid.uuid4().hex[:12]
    port = WeaviatePorts.free().http
    address = f"127.0.0.1:{port}"

    first = _start(weaviate_server, prefix, embedding_addr, port)
    try:
        seen = await asyncio.wait_for(_index(address, vault, stop_after=NOTES // 3), 200)
        assert 0 < seen < NOTES
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait()

    second = _start(weaviate_server, prefix, embedding_addr, port)
    try:
        await asyncio.wait_for(_index(address, vault, stop_after=None), 200)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0

    store = await WeaviateStore.connect(
        http_host=weaviate_server.host,
        http_port=weaviate_server.ports.http,
        grpc_port=weaviate_server.ports.grpc,
        api_key=weaviate_server.api_key,
        dimension=384,
        prefix=prefix,
    )
    try:
        stats = await store.stats("default")
        assert (stats.notes, stats.chunks) == (NOTES, expected_chunks)
        fingerprints = await store.note_fingerprints("default")
        assert len(fingerprints) == NOTES
        assert all(fp for _, fp in fingerprints.values())  # no note left half-written
        hits = await store.search_chunks_keyword("default", "topic7", 5, SearchFilter())
        assert len({h.id for h in hits}) == len(hits) >= 1
    finally:
        await store.close()

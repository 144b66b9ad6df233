"""kill -9 in the middle of indexing, then a rerun: consistent store, no duplicates, no losses.

The retrieval service runs as a real process (the embedding service in-process); the store is
then opened directly to compare with what the vault holds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from memex.retrieval.ingest.chunking import chunk_body
from memex.retrieval.store.base import SearchFilter
from memex.retrieval.store.embedded import EmbeddedStore
from memex.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from memex.shared.health import wait_until_serving

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
NOTES = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(store_dir: Path, embedding_addr: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMEX_RETRIEVAL_PORT": str(port),
        "MEMEX_RETRIEVAL_EMBEDDING_ADDR": embedding_addr,
        "MEMEX_RETRIEVAL_STORE_DIR": str(store_dir),
        "MEMEX_RETRIEVAL_EMBED_BATCH": "8",
    }
    return subprocess.Popen([sys.executable, "-m", "memex.retrieval"], env=env)


async def _index(address: str, vault: Path, stop_after: int | None) -> int:
    """Streams IndexVault; returns the last progress count seen."""
    await wait_until_serving(address, timeout=120)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        done = 0
        stream = stub.IndexVault(retrieval_pb2.IndexVaultRequest(vault_path=str(vault)))
        async for message in stream:
            done = message.done
            if stop_after is not None and done >= stop_after:
                return done
        return done


def _vault(root: Path) -> int:
    chunks = 0
    for i in range(NOTES):
        body = f"# Note {i}\n" + " ".join(f"topic{i} word{j}" for j in range(40 + i % 150)) + "\n"
        (root / f"n{i:03d}.md").write_text(body)
        chunks += len(chunk_body(body))
    return chunks


async def test_kill_9_mid_index_then_rerun(tmp_path: Path, embedding_addr: str) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    expected_chunks = _vault(vault)
    store_dir = tmp_path / "store"
    port = _free_port()
    address = f"127.0.0.1:{port}"

    first = _start(store_dir, embedding_addr, port)
    try:
        seen = await asyncio.wait_for(_index(address, vault, stop_after=NOTES // 3), 180)
        assert 0 < seen < NOTES
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait()

    second = _start(store_dir, embedding_addr, port)
    try:
        await asyncio.wait_for(_index(address, vault, stop_after=None), 180)
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0

    store = await EmbeddedStore.open(store_dir, 384)
    try:
        stats = await store.stats("default")
        assert stats.notes == NOTES
        assert stats.chunks == expected_chunks
        assert len(await store.note_fingerprints("default")) == NOTES
        # The ANN index (reloaded or rebuilt) holds exactly one vector per chunk.
        hits = await store.search_chunks_keyword("default", "topic7", 5, SearchFilter())
        assert len({h.id for h in hits}) == len(hits) >= 1
        ann = store._indexes.index("default", "chunks")
        assert len(ann) == expected_chunks
    finally:
        await store.close()

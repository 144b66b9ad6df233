"""The embedding service as a real process: readiness, SIGTERM drain, bad input."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.health import check, wait_until_serving
from memex.testing import free_port

pytestmark = pytest.mark.e2e

SERVICE = "memex.embedding.v1.EmbeddingService"


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    address: str


@pytest.fixture
def service(model_dir: Path, tmp_path: Path) -> Iterator[Service]:
    port = free_port()
    env = {
        **os.environ,
        "MEMEX_EMBEDDING_PORT": str(port),
        "MEMEX_EMBEDDING_MODEL_DIR": str(model_dir),
        # Generous, so a slow shared CI machine still drains rather than cancels.
        "MEMEX_EMBEDDING_GRACE_SECONDS": "60",
    }
    log = open(tmp_path / "embedding.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "memex.embedding"], env=env, stdout=log, stderr=log
    )
    yield Service(proc, f"127.0.0.1:{port}")
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)
    log.close()


async def test_health_turns_serving_after_load_and_bad_input_gets_its_code(
    service: Service,
) -> None:
    address = service.address
    await wait_until_serving(address, SERVICE, timeout=60)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        reply = await stub.Embed(embedding_pb2.EmbedRequest(texts=["hello"]))
        assert reply.dimension == 384
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Embed(embedding_pb2.EmbedRequest(texts=[]))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_sigterm_during_a_batch_drains_it_then_exits_cleanly(service: Service) -> None:
    address, process = service.address, service.process
    await wait_until_serving(address, SERVICE, timeout=60)
    texts = [f"document {i}: " + "many words of text " * 60 for i in range(64)]
    async with grpc.aio.insecure_channel(address) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        call = asyncio.ensure_future(
            stub.Embed(embedding_pb2.EmbedRequest(texts=texts), timeout=90)
        )
        await asyncio.sleep(0.3)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.2)
        assert await check(address, SERVICE) in ("NOT_SERVING", "UNREACHABLE")
        reply = await call
    assert len(reply.embeddings) == 64
    assert await asyncio.to_thread(process.wait, 60) == 0
    assert time.monotonic() - started < 60

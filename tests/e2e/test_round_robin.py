"""Two real embedding processes behind one target: a channel from open_channel spreads its calls
over both (round_robin), as a client does over a headless Service's pods in Kubernetes
(deploy/embedding.yaml). A plain channel (gRPC's default pick_first) is the control: it sends every
call to one process, which shows the per-process counts can tell the two apart."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.client import open_channel
from memex.shared.health import wait_until_serving
from memex.testing import free_ports

pytestmark = pytest.mark.e2e

SERVICE = "memex.embedding.v1.EmbeddingService"
CALLS = 60


@pytest.fixture
def two_embedders(model_dir: Path, tmp_path: Path) -> Iterator[list[tuple[int, int]]]:
    """Two embedding processes: their (gRPC port, metrics port) pairs."""
    ports = free_ports(4)
    pairs = [(ports[0], ports[1]), (ports[2], ports[3])]
    processes = []
    for n, (port, metrics_port) in enumerate(pairs):
        env = {
            **os.environ,
            "MEMEX_EMBEDDING_PORT": str(port),
            "MEMEX_EMBEDDING_METRICS_PORT": str(metrics_port),
            "MEMEX_EMBEDDING_MODEL_DIR": str(model_dir),
            "MEMEX_EMBEDDING_INTRA_OP_THREADS": "1",
        }
        log = open(tmp_path / f"embedding-{n}.log", "wb")  # noqa: SIM115
        processes.append(
            (
                subprocess.Popen(
                    [sys.executable, "-m", "memex.embedding"], env=env, stdout=log, stderr=log
                ),
                log,
            )
        )
    yield pairs
    for process, log in processes:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        log.close()


def handled_embeds(metrics_port: int) -> float:
    """Embed calls this process answered OK, from its own /metrics."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        text = reply.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "memex_grpc_server_handled"
        for sample in family.samples
        if sample.name.endswith("_total")
        and sample.labels.get("method", "").endswith("Embed")
        and sample.labels.get("code") == "OK"
    )


async def embed_many(channel: grpc.aio.Channel) -> None:
    stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
    for batch in range(CALLS // 10):
        replies = await asyncio.gather(
            *(
                stub.Embed(embedding_pb2.EmbedRequest(texts=[f"note {batch}.{i}"]), timeout=30)
                for i in range(10)
            )
        )
        assert all(reply.dimension == 384 for reply in replies)


async def test_one_channel_spreads_calls_over_every_address(
    two_embedders: list[tuple[int, int]],
) -> None:
    for port, _ in two_embedders:
        await wait_until_serving(f"127.0.0.1:{port}", SERVICE, timeout=90)
    # One target, two addresses: what dns:///memex-embedding:50051 resolves to with two pods.
    target = "ipv4:" + ",".join(f"127.0.0.1:{port}" for port, _ in two_embedders)

    async with open_channel(target, service=SERVICE) as channel:
        # Until both connections are up, calls go to the one that is; count from then on.
        await embed_many(channel)
        before = [handled_embeds(metrics) for _, metrics in two_embedders]
        await embed_many(channel)
    shares = [handled_embeds(m) - b for (_, m), b in zip(two_embedders, before, strict=True)]
    print(f"round_robin: calls per process {shares}")
    assert sum(shares) == CALLS, shares
    assert min(shares) >= 0.3 * CALLS, f"calls per process {shares}: one took almost none"

    # The control: gRPC's default policy (pick_first) keeps every call on one address.
    before = [handled_embeds(metrics) for _, metrics in two_embedders]
    async with grpc.aio.insecure_channel(target) as channel:
        await embed_many(channel)
    shares = [handled_embeds(m) - b for (_, m), b in zip(two_embedders, before, strict=True)]
    print(f"pick_first: calls per process {shares}")
    assert sorted(shares) == [0, CALLS], f"pick_first spread calls {shares}"

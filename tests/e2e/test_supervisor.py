"""`memex up` / `status` / `down` with real processes, and recovery from a killed service."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import grpc
import pytest

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared.health import wait_until_serving

pytestmark = pytest.mark.e2e

SERVICE = "memex.embedding.v1.EmbeddingService"


def run(command: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=180)


def status(command: list[str], env: dict[str, str]) -> dict[str, object]:
    result = run(command, env, "status", "--json")
    return dict(json.loads(result.stdout))


async def test_a_killed_service_is_unavailable_then_restarted(
    memex_cli: list[str], stack_env: dict[str, str]
) -> None:
    assert run(memex_cli, stack_env, "status").returncode == 3  # not running yet
    up = run(memex_cli, stack_env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "embedding" in up.stdout and "SERVING" in up.stdout
    address = f"127.0.0.1:{stack_env['MEMEX_EMBEDDING_PORT']}"

    state = json.loads((Path(stack_env["MEMEX_DATA_DIR"]) / "run" / "stack.json").read_text())
    os.kill(state["services"]["embedding"]["pid"], signal.SIGKILL)
    await asyncio.sleep(0.2)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Embed(embedding_pb2.EmbedRequest(texts=["x"]), timeout=2)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    await wait_until_serving(address, SERVICE, timeout=90)
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(
            embedding_pb2.EmbedRequest(texts=["back again"])
        )
    assert reply.dimension == 384
    report = status(memex_cli, stack_env)
    assert report["running"] is True
    assert report["services"]["embedding"]["restarts"] == 1  # type: ignore[index]

    down = run(memex_cli, stack_env, "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert status(memex_cli, stack_env)["running"] is False


def test_up_twice_is_harmless_and_embed_works_through_the_cli(
    memex_cli: list[str], stack_env: dict[str, str]
) -> None:
    assert run(memex_cli, stack_env, "up").returncode == 0
    again = run(memex_cli, stack_env, "up")
    assert again.returncode == 0 and "already running" in again.stdout
    embedded = run(memex_cli, stack_env, "embed", "--json", "a sentence")
    assert embedded.returncode == 0
    assert json.loads(embedded.stdout)["dimension"] == 384
    bad = run(memex_cli, stack_env, "embed", "x" * 30_000)
    assert bad.returncode == 2 and "characters" in bad.stderr


def test_commands_say_how_to_start_the_stack_when_it_is_down(
    memex_cli: list[str], stack_env: dict[str, str]
) -> None:
    result = run(memex_cli, stack_env, "embed", "hello")
    assert result.returncode == 3
    assert "memex up" in result.stderr

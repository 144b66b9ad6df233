"""Helpers for tests that need a reasoner or a model server: real servers on free loopback ports.

Used by the reasoner's own tests and by the stages above it (a stub reasoner with a script feeds
them any stream they need), so they live in memex-testing rather than in one conftest.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx2

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.core import ReasonerCore
from memex.reasoner.llama_engine import default_threads
from memex.reasoner.server import build
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.server import GrpcService, RunningServer
from memex.testing import free_port, serving


class Served:
    """A running reasoner: its stub, its core (to look at the scheduler) and its port."""

    def __init__(self, service: GrpcService[ReasonerCore], running: RunningServer) -> None:
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{running.port}")
        self.stub = reasoner_pb2_grpc.ReasonerServiceStub(self.channel)
        self.core = service.slot.get()
        self.running = running


@contextlib.asynccontextmanager
async def served(settings: ReasonerSettings) -> AsyncIterator[Served]:
    """The reasoner with ``settings`` over real gRPC on a free port."""
    service = build(settings)
    async with serving(service) as running:
        result = Served(service, running)
        try:
            yield result
        finally:
            await result.channel.close()


def user(text: str, **sampling: Any) -> reasoner_pb2.GenerateRequest:
    """A one-message request."""
    return reasoner_pb2.GenerateRequest(
        messages=[reasoner_pb2.Message(role=reasoner_pb2.ROLE_USER, content=text)],
        sampling=reasoner_pb2.Sampling(**sampling),
    )


async def collect(
    call: Any,
) -> tuple[list[str], reasoner_pb2.GenerateFinal]:
    """The deltas and the final message of a Generate stream."""
    deltas: list[str] = []
    final = None
    # read(), not iteration: gRPC refuses to mix the two, and tests read a first message by hand.
    while (message := await call.read()) is not grpc.aio.EOF:
        if message.HasField("delta"):
            assert final is None, "a delta came after the final message"
            deltas.append(message.delta)
        else:
            final = message.final
    assert final is not None, "the stream ended without a final message"
    return deltas, final


@contextlib.contextmanager
def openai_server(model_path: Path, *, alias: str = "smollm2", n_ctx: int = 2048) -> Iterator[str]:
    """llama-cpp-python's own OpenAI-compatible server on a free loopback port; yields its /v1
    URL once it answers, and stops it afterwards."""
    port = free_port()
    threads = default_threads(1)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path),
            "--model_alias",
            alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
            # Its default batch threads are all the cores, whose spin-waiting makes prompt
            # evaluation many times slower on a busy 2-core machine; use what our engine uses.
            "--n_threads",
            str(threads),
            "--n_threads_batch",
            str(threads),
            "--verbose",
            "false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    try:
        while True:
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                raise RuntimeError(f"llama_cpp.server exited: {stderr[-2000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("llama_cpp.server did not come up within 90s")
            time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""Helpers for tests of memex services: real servers on free loopback ports.

Used by every service's tests, so they live in the library rather than in one conftest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memex.shared.server import GrpcService, RunningServer

REPO_ROOT = Path(__file__).resolve().parents[4]
SHARED_DATA = REPO_ROOT.parent / "shared"


def free_port() -> int:
    """A TCP port that was free on loopback a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that were free on loopback a moment ago. Every socket stays
    bound until all are chosen: closed one at a time, the same port can come back twice."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def require(path: Path, why: str) -> Path:
    """Returns ``path`` if it exists. Otherwise the test fails under CI (where everything must be
    prepared) and is skipped elsewhere, with ``why`` saying how to prepare it."""
    if path.exists():
        return path
    message = f"{path} is missing: {why}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def shared_data(relative: str) -> Path:
    """A file of the reference data in ../shared beside the checkout."""
    return require(
        SHARED_DATA / relative, "the reference data ../shared is not beside this checkout"
    )


async def _first(task: asyncio.Task[None], awaited: asyncio.Future[Any], timeout: float) -> None:
    """Waits for ``awaited``; if the service's task ends first, raises what ended it."""
    await asyncio.wait({task, awaited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if awaited.done():
        return
    if task.done():
        task.result()
        raise RuntimeError("the service stopped before it was ready")
    raise TimeoutError(f"the service was not ready within {timeout:.0f}s")


@contextlib.asynccontextmanager
async def serving(service: GrpcService[Any], *, ready: bool = True) -> AsyncIterator[RunningServer]:
    """Runs ``service`` in this event loop until the block ends, then stops it gracefully."""
    task = asyncio.create_task(service.run(handle_signals=False))
    await _first(task, service.started, 30)
    running = service.started.result()
    try:
        if ready:
            await _first(task, asyncio.ensure_future(running.ready.wait()), 60)
        yield running
    finally:
        running.stop()
        await asyncio.wait_for(task, 60)

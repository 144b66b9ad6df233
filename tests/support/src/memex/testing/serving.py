"""A gRPC service of memex run in the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from memex.shared.server import GrpcService, RunningServer


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

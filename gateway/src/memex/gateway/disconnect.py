"""Cancelling a JSON call's gRPC work when its client goes away.

Starlette watches for a disconnect only while streaming a response; an ask can take a minute of
model time, so JSON routes that wait on the model race the call against the client's disconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from fastapi import Request

from memex.gateway.errors import ApiError

T = TypeVar("T")
log = logging.getLogger(__name__)


async def _disconnected(request: Request) -> None:
    # The body has been read by now, so the next message is the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(
    request: Request, work: Awaitable[T], cancel: Callable[[], object]
) -> T:
    """Awaits ``work`` (waiting on gRPC calls); if the client disconnects first, runs ``cancel``
    (which cancels the calls, and so the model's generation behind them) and answers 499, which
    nobody will read."""

    async def outcome() -> T:
        return await work

    task = asyncio.ensure_future(outcome())
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            log.info("the client went away before the answer; cancelling its call")
            cancel()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError, ApiError):
                await task
            raise ApiError(grpc.StatusCode.CANCELLED, "the client went away")
    return task.result()

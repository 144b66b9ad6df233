"""A bounded number of active generations with a fair FIFO queue in front.

A freed slot is handed straight to the oldest waiter (no barging by newcomers), a waiter that goes
away leaves the queue, and a full queue is refused at once so callers can back off.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator

from memex.shared.errors import ResourceExhausted


class Scheduler:
    """Lends at most ``max_active`` slots; up to ``max_queue`` callers wait in arrival order."""

    def __init__(self, max_active: int, max_queue: int) -> None:
        if max_active < 1:
            raise ValueError("max_active must be at least 1")
        self.max_active = max_active
        self.max_queue = max_queue
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        # Set while nothing runs and nobody waits: tests and the benchmark await it to see a
        # cancelled generation's slot come back.
        self.idle = asyncio.Event()
        self.idle.set()

    @property
    def active(self) -> int:
        """Slots lent out now."""
        return self._active

    @property
    def queued(self) -> int:
        """Callers waiting for a slot now."""
        return sum(1 for waiter in self._waiters if not waiter.done())

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[float]:
        """Holds one slot for the block; yields the seconds spent waiting for it.

        ResourceExhausted when the queue is full. Cancelling while queued leaves the queue.
        """
        started = time.perf_counter()
        if self._active < self.max_active and not self._waiters:
            self._active += 1
            self.idle.clear()
        else:
            if self.queued >= self.max_queue:
                raise ResourceExhausted(
                    f"the reasoner is busy: {self._active} generations running and "
                    f"{self.queued} waiting (the queue holds {self.max_queue}); retry shortly"
                )
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            self.idle.clear()
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    # The slot was handed over just as we were cancelled: pass it on.
                    self._release()
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                    self._update_idle()
                raise
        try:
            yield time.perf_counter() - started
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot changes hands; _active stays the same
                return
        self._active -= 1
        self._update_idle()

    def _update_idle(self) -> None:
        if self._active == 0 and not self._waiters:
            self.idle.set()

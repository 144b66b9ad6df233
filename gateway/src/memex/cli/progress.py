"""A ticking "still working" line on stderr for calls that take a while (an ask on a CPU model
takes tens of seconds); shown only on a terminal, and erased when the work is done."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Spinner:
    """``label`` with a spinner and the seconds elapsed, until ``stop``."""

    def __init__(self, label: str, show: bool | None = None) -> None:
        self.label = label
        self.show = sys.stderr.isatty() if show is None else show
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Starts ticking (nothing when not shown)."""
        if self.show and self._task is None:
            self._task = asyncio.create_task(self._tick())

    async def stop(self) -> None:
        """Stops and erases the line; idempotent."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()

    async def _tick(self) -> None:
        start, frame = time.monotonic(), 0
        while True:
            elapsed = time.monotonic() - start
            sys.stderr.write(f"\r{_FRAMES[frame % len(_FRAMES)]} {self.label} {elapsed:.0f}s ")
            sys.stderr.flush()
            frame += 1
            await asyncio.sleep(0.1)

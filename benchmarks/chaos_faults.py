"""The faults `make chaos` injects into a running stack, and how a service's recovery is timed.

Each fault is a plain function of the stack under test; none knows about the load or the checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memex.cli.stack.services import stack_services
from memex.cli.stack.supervisor import probe
from memex.shared.stack_settings import StackSettings


@dataclass(frozen=True)
class Recovery:
    """How a killed service came back: when the supervisor started it again (seconds after the
    kill) and how long it then took to serve."""

    service: str
    restarted_after_s: float
    serving_after_restart_s: float


class RunningStack:
    """A stack `memex up` started, seen through its state file and its health probes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.data_dir = Path(env["MEMEX_DATA_DIR"])
        fields = {
            name.removeprefix("MEMEX_").lower(): value
            for name, value in env.items()
            if name.removeprefix("MEMEX_").lower() in StackSettings.model_fields
        }
        self.settings = StackSettings.model_validate(fields)  # the stack's ports, not ours
        self.gateway_url = f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}"

    def memex(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Runs the `memex` CLI against this stack."""
        return subprocess.run(
            [sys.executable, "-m", "memex.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def state(self) -> dict[str, dict[str, object]]:
        """Each service's pid, status and restart count, as the supervisor last wrote them."""
        path = self.data_dir / "run" / "stack.json"
        services: dict[str, dict[str, object]] = json.loads(path.read_text())["services"]
        return services

    def pid(self, service: str) -> int:
        """The service's current process id."""
        return int(str(self.state()[service]["pid"]))

    async def serving(self, service: str) -> bool:
        """Whether the service answers its health probe with SERVING now."""
        spec = next(s for s in stack_services(self.settings) if s.name == service)
        return await probe(spec) == "SERVING"

    async def kill_and_time(self, service: str, timeout: float = 60.0) -> Recovery:
        """kill -9 the service, then time the supervisor's restart and the service's health."""
        old = self.pid(service)
        killed = time.monotonic()
        os.kill(old, signal.SIGKILL)
        restarted = await self._new_pid(service, old, killed + timeout)
        while time.monotonic() < killed + timeout:
            if await self.serving(service):
                return Recovery(service, restarted - killed, time.monotonic() - restarted)
            await asyncio.sleep(0.05)
        raise TimeoutError(f"{service} not serving {timeout:.0f} s after kill -9")

    async def _new_pid(self, service: str, old: int, deadline: float) -> float:
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError, KeyError):
                pid = self.pid(service)
                if pid != old and _alive(pid):
                    return time.monotonic()
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the supervisor did not restart {service}")

    def restarts(self) -> dict[str, int]:
        """Restarts per service, as the supervisor counts them."""
        return {name: int(str(s["restarts"])) for name, s in self.state().items()}


def stop_for(pid: int, seconds: float) -> None:
    """SIGSTOP a process, then SIGCONT it ``seconds`` later (a stall, not a crash)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


def fill_disk(folder: Path) -> Path:
    """Writes one file of zeros into ``folder`` until its filesystem is full; returns the file
    (delete it to free the space)."""
    filler = folder / "chaos-filler"
    block = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as f:
        while True:
            try:
                f.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


def corrupt(path: Path) -> int:
    """Overwrites the middle third of a file with a repeating non-zero pattern (a torn write or a
    bad sector, not a missing file); returns how many bytes were overwritten."""
    size = path.stat().st_size
    start, length = size // 3, max(1, size // 3)
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(bytes([0xA5]) * length)
    return length


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

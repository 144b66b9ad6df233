"""Runs every service of the stack as its own process, keeps them healthy, stops them cleanly.

The supervisor writes its state to ``<data_dir>/run/stack.json`` so `memex status` and `memex down`
can find it. A crashed service is restarted with exponential backoff; children get SIGTERM if
the supervisor itself dies (Linux parent-death signal), so nothing is left orphaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memex.cli.stack.processes import ServiceDef
from memex.cli.stack.services import stack_services
from memex.cli.stack.supervisor_metrics import SupervisorMetrics
from memex.shared.health import check, check_http
from memex.shared.stack_settings import StackSettings

log = logging.getLogger(__name__)

STABLE_AFTER_SECONDS = 60.0  # a service up this long has its restart backoff reset
STOP_GRACE_SECONDS = 15.0


@dataclass
class _Child:
    spec: ServiceDef
    process: asyncio.subprocess.Process | None = None
    log_file: IO[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff: float = 0.5
    status: str = "STARTING"


async def probe(spec: ServiceDef) -> str:
    """A service's health: its gRPC health service, or its HTTP probe for non-gRPC processes."""
    if spec.health_url is not None:
        return await check_http(spec.health_url)
    return await check(spec.address, spec.health_service)


def busy_ports(settings: StackSettings) -> list[str]:
    """A sentence for each port the stack needs that another program already listens on.

    Checked before anything starts: a service that meets a foreign server on its port would
    otherwise fail later with a confusing probe error (an HTTP probe reading gRPC bytes)."""
    busy = []
    for setting, port in settings.listening_ports().items():
        with socket.socket() as sock:
            # SO_REUSEADDR: a port whose last connections linger in TIME_WAIT is free; only a
            # listening socket makes the bind fail.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((settings.host, port))
            except OSError:
                busy.append(
                    f"port {port} is in use by another program: stop it, or give memex "
                    f"another port with {setting}"
                )
    return busy


def log_tail(path: os.PathLike[str], lines: int = 15) -> str:
    """The last ``lines`` lines of a log file, or "(no log)"."""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def state_path(settings: StackSettings) -> Path:
    """Where the supervisor publishes its state."""
    return settings.run_dir / "stack.json"


def read_state(settings: StackSettings) -> dict[str, Any] | None:
    """The running supervisor's state, or None when no stack is running."""
    path = state_path(settings)
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    pid = int(state.get("pid", 0))
    if pid <= 0 or not alive(pid):
        return None
    return state


def alive(pid: int) -> bool:
    """Whether process ``pid`` is still running: it exists and is not a zombie (an exited
    process its parent has not reaped, as an orphan under a PID 1 that never reaps stays)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel whether it exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class Supervisor:
    """Starts the services in order, waits for each to be healthy, restarts crashed ones."""

    def __init__(self, settings: StackSettings, services: list[ServiceDef] | None = None) -> None:
        self._settings = settings
        self._children = [_Child(s) for s in (services or stack_services(settings))]
        self._stopping = asyncio.Event()
        self._phase = "starting"
        self._state_unwritten = False  # the last state write failed (a full disk, say)
        self.metrics = SupervisorMetrics([c.spec.name for c in self._children])

    def stop(self) -> None:
        """Asks the supervisor to stop every service and exit (what SIGTERM does)."""
        self._stopping.set()

    async def run(self) -> int:
        """Runs until stopped; returns 0, or 1 when a service could not be started at all."""
        settings = self._settings
        settings.run_dir.mkdir(parents=True, exist_ok=True)
        settings.log_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        if busy := busy_ports(settings):
            for sentence in busy:
                log.error("%s", sentence)
            return 1
        try:
            self.metrics.serve(settings.host, settings.supervisor_metrics_port)
        except OSError as exc:  # taken between the check above and now
            log.error(
                "cannot serve the supervisor's metrics on port %d (%s): give it another port "
                "with MEMEX_SUPERVISOR_METRICS_PORT",
                settings.supervisor_metrics_port,
                exc,
            )
            return 1
        try:
            for child in self._children:
                if child.process is None:
                    for member in self._group_of(child):
                        await self._spawn(member)
                if self._stopping.is_set() or not await self._wait_healthy(child):
                    self._phase = "failed" if not self._stopping.is_set() else "stopping"
                    self._write_state()
                    return 0 if self._stopping.is_set() else 1
            self._phase = "ready"
            self._write_state()
            log.info("stack ready: %s", ", ".join(c.spec.name for c in self._children))
            await self._watch()
            return 0
        finally:
            self._phase = "stopping"
            self._write_state()
            await self._stop_all()
            state_path(settings).unlink(missing_ok=True)
            self.metrics.close()

    async def _spawn(self, child: _Child) -> None:
        settings = self._settings
        if child.log_file is None:
            child.log_file = open(settings.log_dir / f"{child.spec.name}.log", "ab")  # noqa: SIM115, ASYNC230
        env = {**os.environ, **child.spec.env, "PYTHONUNBUFFERED": "1"}
        # The child dies with the supervisor (memex.shared.supervised asks for that itself: a
        # preexec_fn here would fork, and run gRPC's fork handlers in the child).
        child.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "memex.shared.supervised",
            str(os.getpid()),
            child.spec.module,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=child.log_file,
            stderr=asyncio.subprocess.STDOUT,
        )
        child.started_at = time.monotonic()
        child.status = "STARTING"
        log.info("started %s (pid %d)", child.spec.name, child.process.pid)
        self._write_state()

    def _group_of(self, child: _Child) -> list[_Child]:
        """``child`` and the services that start with it (its group)."""
        group = child.spec.group
        return [c for c in self._children if c is child or (group and c.spec.group == group)]

    async def _wait_healthy(self, child: _Child) -> bool:
        deadline = time.monotonic() + self._settings.start_timeout_seconds
        while time.monotonic() < deadline and not self._stopping.is_set():
            assert child.process is not None
            if child.process.returncode is not None:
                service_log = self._settings.log_dir / f"{child.spec.name}.log"
                log.error(
                    "%s exited with %d while starting; the end of %s:\n%s",
                    child.spec.name,
                    child.process.returncode,
                    service_log,
                    log_tail(service_log),
                )
                child.status = "EXITED"
                return False
            child.status = await probe(child.spec)
            if child.status == "SERVING":
                self._write_state()
                return True
            if child.status == "NOT_HTTP":
                log.error(
                    "%s: something that does not speak HTTP answers at %s; another program "
                    "holds its port",
                    child.spec.name,
                    child.spec.health_url,
                )
                return False
            await asyncio.sleep(0.2)
        return self._stopping.is_set()

    async def _watch(self) -> None:
        while not self._stopping.is_set():
            for child in self._children:
                assert child.process is not None
                if child.process.returncode is None:
                    continue
                uptime = time.monotonic() - child.started_at
                if uptime > STABLE_AFTER_SECONDS:
                    child.backoff = 0.5
                log.warning(
                    "%s exited with %d; restarting in %.1fs",
                    child.spec.name,
                    child.process.returncode,
                    child.backoff,
                )
                child.status = "RESTARTING"
                self._write_state()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), child.backoff)
                if self._stopping.is_set():
                    return
                child.backoff = min(child.backoff * 2, self._settings.restart_backoff_max_seconds)
                child.restarts += 1
                self.metrics.restarted(child.spec.name)
                await self._spawn(child)
            for child in self._children:
                if child.status != "SERVING":
                    status = await probe(child.spec)
                    if status != child.status:
                        child.status = status
                        self._write_state()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), 0.5)

    async def _stop_all(self) -> None:
        for child in reversed(self._children):
            process = child.process
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), STOP_GRACE_SECONDS)
                except TimeoutError:
                    log.warning(
                        "%s did not stop in %.0fs; killing it", child.spec.name, STOP_GRACE_SECONDS
                    )
                    process.kill()
                    await process.wait()
            if child.log_file is not None:
                child.log_file.close()
                child.log_file = None
            log.info("stopped %s", child.spec.name)

    def _write_state(self) -> None:
        # Every status change is written here, so the metrics follow it from one place.
        for child in self._children:
            self.metrics.status(child.spec.name, child.status)
        state = {
            "pid": os.getpid(),
            "state": self._phase,
            "store": self._settings.store,
            "orchestrator_state": self._settings.state,
            "weaviate_nodes": self._settings.weaviate_nodes,
            "log_dir": str(self._settings.log_dir),
            "services": {
                c.spec.name: {
                    "address": c.spec.address,
                    "pid": c.process.pid if c.process else None,
                    "status": c.status,
                    "restarts": c.restarts,
                }
                for c in self._children
            },
        }
        path = state_path(self._settings)
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(state, indent=2))
            tmp.replace(path)
        except OSError as exc:
            # A full disk must not take the supervisor down with it: the services go on being
            # watched and restarted, and `memex status` reads the last state written until the
            # next write succeeds.
            if not self._state_unwritten:
                log.error("cannot write %s (%s); supervising on", path, exc)
            self._state_unwritten = True
        else:
            self._state_unwritten = False

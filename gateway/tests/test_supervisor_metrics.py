"""The supervisor's /metrics: whether each service is up, and how often it was restarted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import textwrap
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memex.cli.stack.processes import ServiceDef
from memex.cli.stack.supervisor import Supervisor, busy_ports
from memex.cli.stack.supervisor_metrics import SupervisorMetrics
from memex.shared.stack_settings import StackSettings
from memex.testing import free_port
from memex.testing.stack import private_stack_env

# A stand-in service: answers 200 to any HTTP GET on the port it is given.
FAKE_SERVICE = """
    import http.server, os

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", int(os.environ["FAKE_PORT"])), Ok).serve_forever()
"""


def samples(port: int) -> dict[tuple[str, str], float]:
    """The supervisor's samples, keyed by (metric name, service)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {
        (sample.name, sample.labels.get("service", "")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def wait_for(port: int, key: tuple[str, str], value: float) -> None:
    seen: float | None = None
    for _ in range(150):
        try:
            seen = await asyncio.to_thread(lambda: samples(port).get(key))
        except OSError:  # the supervisor has not started serving yet
            seen = None
        if seen == value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{key} stayed {seen}, expected {value}")


def test_every_service_appears_before_it_restarts() -> None:
    metrics = SupervisorMetrics(["embedding", "gateway"])
    metrics.status("gateway", "SERVING")
    metrics.restarted("embedding")
    get = metrics.registry.get_sample_value
    assert get("memex_supervisor_restarts_total", {"service": "embedding"}) == 1
    assert get("memex_supervisor_restarts_total", {"service": "gateway"}) == 0
    assert get("memex_supervisor_service_up", {"service": "gateway"}) == 1
    assert get("memex_supervisor_service_up", {"service": "embedding"}) == 0
    metrics.status("gateway", "UNREACHABLE")
    assert get("memex_supervisor_service_up", {"service": "gateway"}) == 0


def test_the_metrics_port_is_a_stack_port(tmp_path: Path) -> None:
    settings = StackSettings(data_dir=tmp_path, supervisor_metrics_port=9150)
    assert settings.listening_ports()["MEMEX_SUPERVISOR_METRICS_PORT"] == 9150
    # Prometheus runs beside the stack, not in it: a running one must not block `memex up`.
    assert "MEMEX_PROMETHEUS_PORT" not in settings.listening_ports()
    with pytest.raises(ValueError, match="MEMEX_PROMETHEUS_PORT"):
        StackSettings(data_dir=tmp_path, prometheus_port=settings.gateway_port)


def fake_supervisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Supervisor:
    """A supervisor of one stand-in HTTP service, on the private stack's ports."""
    for name, value in private_stack_env(tmp_path).items():
        if name.startswith("MEMEX_"):
            monkeypatch.setenv(name, value)
    (tmp_path / "fake_service.py").write_text(textwrap.dedent(FAKE_SERVICE))
    service_port = free_port()
    spec = ServiceDef(
        name="fake",
        module="fake_service",
        address=f"127.0.0.1:{service_port}",
        health_service="",
        health_url=f"http://127.0.0.1:{service_port}/",
        env={"PYTHONPATH": str(tmp_path), "FAKE_PORT": str(service_port)},
    )
    return Supervisor(StackSettings(), [spec])


async def test_a_killed_service_counts_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = fake_supervisor(tmp_path, monkeypatch)
    settings = StackSettings()
    running = asyncio.create_task(supervisor.run())
    port = settings.supervisor_metrics_port
    try:
        await wait_for(port, ("memex_supervisor_service_up", "fake"), 1)
        assert busy_ports(settings)  # the supervisor's own port is taken while it runs
        pid = supervisor._children[0].process.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGKILL)
        await wait_for(port, ("memex_supervisor_restarts_total", "fake"), 1)
        await wait_for(port, ("memex_supervisor_service_up", "fake"), 1)
    finally:
        supervisor.stop()
        assert await asyncio.wait_for(running, 30) == 0
    assert not busy_ports(settings)  # and freed when it stops


async def test_a_full_disk_does_not_stop_the_supervisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = fake_supervisor(tmp_path, monkeypatch)
    port = StackSettings().supervisor_metrics_port
    running = asyncio.create_task(supervisor.run())
    try:
        await wait_for(port, ("memex_supervisor_service_up", "fake"), 1)
        # The state file can no longer be written (a folder where its temp file goes stands in
        # for a full disk): the supervisor still restarts what dies.
        blocker = tmp_path / "run" / "stack.tmp"
        blocker.mkdir()
        os.kill(supervisor._children[0].process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        await wait_for(port, ("memex_supervisor_restarts_total", "fake"), 1)
        await wait_for(port, ("memex_supervisor_service_up", "fake"), 1)
        assert not running.done()
        blocker.rmdir()
        os.kill(supervisor._children[0].process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        await wait_for(port, ("memex_supervisor_restarts_total", "fake"), 2)
        state = json.loads((tmp_path / "run" / "stack.json").read_text())
        assert state["services"]["fake"]["restarts"] >= 1  # written again once it could be
    finally:
        supervisor.stop()
        assert await asyncio.wait_for(running, 30) == 0

"""`memex observe` for real: Prometheus scrapes every process of a private stack (the gateway
with its own key, keys required) and loads memex's rules."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from memex.cli.observe import JOBS
from memex.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CLI = [sys.executable, "-m", "memex.cli"]
RULE_GROUPS = {
    "memex.availability",
    "memex.rpc",
    "memex.latency",
    "memex.queue",
    "memex.audit",
    "memex.sensitive",
}


def memex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, f"memex {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


def api(base: str, path: str, **params: str) -> Any:
    """The ``data`` of a Prometheus HTTP API answer."""
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    with urllib.request.urlopen(url, timeout=5) as reply:
        body = json.loads(reply.read())
    assert body["status"] == "success", body
    return body["data"]


def wait_until(what: str, check: Any, timeout: float = 60.0) -> Any:
    """Polls ``check`` until it returns something truthy; fails naming ``what`` and the last
    value seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, urllib.error.URLError) as exc:  # Prometheus still starting
            last = exc
        else:
            if last:
                return last
        time.sleep(1)
    raise AssertionError(f"{what} within {timeout:.0f}s; last seen: {last}")


@pytest.fixture
def observed_env(stack_env: dict[str, str]) -> dict[str, str]:
    """The private stack with the stub reasoner (no model to load) and keys required, so the
    gateway's /metrics answers only Prometheus's key."""
    require(Path(shutil.which("prometheus") or "/usr/bin/prometheus"), "run `make prometheus`")
    stack_env.update(MEMEX_REASONER_ENGINE="stub", MEMEX_GATEWAY_REQUIRE_KEYS="true")
    stack_env.pop("MEMEX_REASONER_MODEL_PATH", None)
    return stack_env


def test_prometheus_scrapes_every_process_and_loads_the_rules(
    observed_env: dict[str, str], memex_cli: list[str], tmp_path: Path
) -> None:
    env = observed_env
    # The gateway refuses to start with keys required and none made: the first observe makes
    # Prometheus's key (and checks the configuration with promtool).
    memex(env, "observe", "--config-only")
    memex(env, "up")
    gateway = f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}/metrics"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(gateway, timeout=5)
    assert refused.value.code == 401  # without the key, /metrics is refused

    base = f"http://127.0.0.1:{env['MEMEX_PROMETHEUS_PORT']}"
    log_path = tmp_path / "prometheus.log"
    with open(log_path, "wb") as log:
        prometheus = subprocess.Popen([*CLI, "observe"], env=env, stdout=log, stderr=log)
    try:

        def health() -> dict[str, str]:
            targets = api(base, "/api/v1/targets")["activeTargets"]
            found = {t["labels"]["job"]: t["health"] for t in targets}
            return found if set(found) == set(JOBS) and set(found.values()) == {"up"} else {}

        try:
            wait_until("every job up", health)
        except AssertionError:
            targets = api(base, "/api/v1/targets")["activeTargets"]
            errors = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in targets}
            raise AssertionError(f"{errors}\n{log_path.read_text()[-3000:]}") from None

        up = api(base, "/api/v1/query", query="up")["result"]
        assert {s["metric"]["job"]: s["value"][1] for s in up} == dict.fromkeys(JOBS, "1")

        def rule_groups() -> dict[str, list[dict[str, Any]]]:
            groups = api(base, "/api/v1/rules")["groups"]
            found = {g["name"]: g["rules"] for g in groups}
            evaluated = all(r["health"] != "unknown" for rules in found.values() for r in rules)
            return found if set(found) == RULE_GROUPS and evaluated else {}

        groups = wait_until("the memex rules loaded and evaluated", rule_groups)
        unhealthy = [r["name"] for rules in groups.values() for r in rules if r["health"] != "ok"]
        assert not unhealthy, unhealthy

        # The new metrics, scraped for real: the queue from the orchestrator, the supervisor's.
        pending = api(base, "/api/v1/query", query="memex_orchestrator_pending_turns")["result"]
        assert [(s["metric"]["job"], s["value"][1]) for s in pending] == [("orchestrator", "0")]
        serving = api(base, "/api/v1/query", query="memex_supervisor_service_up")["result"]
        assert {s["metric"]["service"] for s in serving} >= {"embedding", "gateway", "worker"}
        assert {s["value"][1] for s in serving} == {"1"}
    finally:
        prometheus.send_signal(signal.SIGTERM)  # observe execs Prometheus: this stops it
        assert prometheus.wait(timeout=30) == 0

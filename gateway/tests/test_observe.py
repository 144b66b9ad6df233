"""`memex observe`: the scrape configuration, Prometheus's own gateway key, and clear failures."""

from __future__ import annotations

import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from memex.cli.observe import (
    JOBS,
    default_rules_file,
    gateway_key_file,
    scrape_config,
)
from memex.gateway import apikeys
from memex.shared.stack_settings import StackSettings
from memex.testing import require
from memex.testing.stack import private_stack_env


def settings(tmp_path: Path) -> StackSettings:
    return StackSettings(data_dir=tmp_path, host="127.0.0.1", supervisor_metrics_port=9150)


def memex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_one_job_per_stack_process_on_its_metrics_port(tmp_path: Path) -> None:
    s = settings(tmp_path)
    config = scrape_config(s, Path("/rules.yml"), Path("/key"))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == set(JOBS)
    assert jobs["embedding"]["static_configs"] == [
        {"targets": [f"127.0.0.1:{s.embedding_metrics_port}"]}
    ]
    assert jobs["supervisor"]["static_configs"] == [{"targets": ["127.0.0.1:9150"]}]
    assert config["rule_files"] == ["/rules.yml"]
    assert config["global"]["scrape_interval"] == "5s"


def test_the_gateway_is_scraped_on_its_http_port_with_a_bearer_key_file(tmp_path: Path) -> None:
    s = settings(tmp_path)
    gateway = next(
        job
        for job in scrape_config(s, Path("/rules.yml"), Path("/key"))["scrape_configs"]
        if job["job_name"] == "gateway"
    )
    assert gateway["metrics_path"] == "/metrics"
    assert gateway["static_configs"] == [{"targets": [f"127.0.0.1:{s.gateway_port}"]}]
    assert gateway["authorization"] == {"type": "Bearer", "credentials_file": "/key"}


def test_the_rules_of_this_checkout_are_found() -> None:
    assert default_rules_file().is_file()


def test_prometheus_gets_a_key_of_its_own_kept_owner_only(tmp_path: Path) -> None:
    s = settings(tmp_path)
    path = gateway_key_file(s)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    keys = apikeys.load_keys(apikeys.keys_path(tmp_path))
    key = apikeys.verify(keys, path.read_text())
    assert key is not None and key.name == "prometheus" and not key.sensitive
    token = path.read_text()
    assert gateway_key_file(s) == path and path.read_text() == token  # made once
    assert len(apikeys.load_keys(apikeys.keys_path(tmp_path))) == 1


def test_a_lost_secret_or_a_revoked_key_is_replaced(tmp_path: Path) -> None:
    s = settings(tmp_path)
    path = gateway_key_file(s)
    first = path.read_text()
    path.unlink()  # the secret is lost: the old key is revoked, a new one made
    second = gateway_key_file(s).read_text()
    keys = apikeys.load_keys(apikeys.keys_path(tmp_path))
    assert second != first and [k.name for k in keys] == ["prometheus"]
    assert apikeys.verify(keys, first) is None
    apikeys.revoke_key(apikeys.keys_path(tmp_path), "prometheus")  # revoked by hand
    third = gateway_key_file(s).read_text()
    assert apikeys.verify(apikeys.load_keys(apikeys.keys_path(tmp_path)), third) is not None


def test_config_only_writes_a_configuration_promtool_accepts(tmp_path: Path) -> None:
    result = memex(private_stack_env(tmp_path), "observe", "--config-only")
    assert result.returncode == 0, result.stdout + result.stderr
    written = Path(result.stdout.strip())
    assert written == tmp_path / "prometheus" / "prometheus.yml"
    config = yaml.safe_load(written.read_text())
    assert {job["job_name"] for job in config["scrape_configs"]} == set(JOBS)


def test_without_prometheus_it_says_how_to_install_it(tmp_path: Path) -> None:
    env = {**private_stack_env(tmp_path), "PATH": str(tmp_path)}  # no prometheus on PATH
    result = memex(env, "observe")
    assert result.returncode == 1
    assert "make prometheus" in result.stderr and "Traceback" not in result.stderr


def test_a_missing_rules_file_is_bad_input(tmp_path: Path) -> None:
    result = memex(private_stack_env(tmp_path), "observe", "--config-only", "--rules", "/nope.yml")
    assert result.returncode == 2
    assert "no rules file at /nope.yml" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "prometheus" / "prometheus.yml").exists()


def test_a_busy_prometheus_port_is_named(tmp_path: Path) -> None:
    require(Path(shutil.which("prometheus") or "/usr/bin/prometheus"), "run `make prometheus`")
    env = private_stack_env(tmp_path)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(env["MEMEX_PROMETHEUS_PORT"])))
        squatter.listen()
        result = memex(env, "observe")
    assert result.returncode == 1
    assert f"port {env['MEMEX_PROMETHEUS_PORT']} is in use" in result.stderr
    assert "MEMEX_PROMETHEUS_PORT" in result.stderr and "Traceback" not in result.stderr

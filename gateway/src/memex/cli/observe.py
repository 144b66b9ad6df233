"""Prometheus for a local stack: the scrape configuration `memex observe` writes, and the gateway
key Prometheus scrapes with.

Every stack process serves /metrics on its own port (the gateway on its HTTP port), so one
scrape job per process names them. The gateway's /metrics needs an API key wherever keys are
required (always off loopback); rather than loosening that, Prometheus gets a key of its own,
``prometheus``, whose secret is kept owner-only beside its configuration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from memex.gateway import apikeys
from memex.shared.stack_settings import StackSettings

SCRAPE_INTERVAL = "5s"
KEY_NAME = "prometheus"

# Each stack process's scrape job and the setting of the port its /metrics is served on.
METRICS_PORTS = {
    "embedding": "embedding_metrics_port",
    "retrieval": "retrieval_metrics_port",
    "reasoner": "reasoner_metrics_port",
    "orchestrator": "orchestrator_metrics_port",
    "worker": "worker_metrics_port",
    "supervisor": "supervisor_metrics_port",
}
GATEWAY_JOB = "gateway"
JOBS = (*METRICS_PORTS, GATEWAY_JOB)


def prometheus_dir(settings: StackSettings) -> Path:
    """Prometheus's configuration, key and data for this stack: ``<data_dir>/prometheus``."""
    return settings.data_dir / "prometheus"


def default_rules_file() -> Path:
    """The rules in the checkout this package runs from: ``deploy/prometheus/memex.rules.yml``."""
    repo = Path(__file__).resolve().parents[4]  # gateway/src/memex/cli/observe.py
    return repo / "deploy" / "prometheus" / "memex.rules.yml"


def scrape_config(
    settings: StackSettings, rules_file: Path, gateway_key_file: Path
) -> dict[str, Any]:
    """Prometheus's configuration for the stack ``settings`` describes: one job per process,
    memex's rules, and the gateway scraped with the key in ``gateway_key_file``."""
    jobs: list[dict[str, Any]] = [
        {
            "job_name": job,
            "static_configs": [{"targets": [f"{settings.host}:{getattr(settings, port)}"]}],
        }
        for job, port in METRICS_PORTS.items()
    ]
    jobs.append(
        {
            "job_name": GATEWAY_JOB,
            "metrics_path": "/metrics",
            "static_configs": [{"targets": [f"{settings.host}:{settings.gateway_port}"]}],
            # The gateway reads `Authorization: Bearer <key>`; the file keeps the secret out of
            # the configuration (and out of Prometheus's /config page).
            "authorization": {"type": "Bearer", "credentials_file": str(gateway_key_file)},
        }
    )
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "rule_files": [str(rules_file)],
        "scrape_configs": jobs,
    }


def write_config(settings: StackSettings, config: dict[str, Any]) -> Path:
    """Writes ``config`` to ``<data_dir>/prometheus/prometheus.yml``; returns its path."""
    path = prometheus_dir(settings) / "prometheus.yml"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    header = "# Written by `memex observe` on each start; edits are overwritten.\n"
    path.write_text(header + yaml.safe_dump(config, sort_keys=False))
    return path


def gateway_key_file(settings: StackSettings) -> Path:
    """The file holding Prometheus's gateway key, made once (owner-only). A key whose secret is
    lost, or a secret whose key was revoked, is replaced by a new key under the same name."""
    path = prometheus_dir(settings) / "gateway-key"
    keys_file = apikeys.keys_path(settings.data_dir)
    keys = apikeys.load_keys(keys_file)
    if path.exists():
        found = apikeys.verify(keys, path.read_text().strip())
        if found is not None and found.name == KEY_NAME:
            return path
    if any(key.name == KEY_NAME for key in keys):
        apikeys.revoke_key(keys_file, KEY_NAME)
    # Without --sensitive: /metrics holds counts, never notes, so the key needs no grant.
    token = apikeys.create_key(keys_file, KEY_NAME)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return path

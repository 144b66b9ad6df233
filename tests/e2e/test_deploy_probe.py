"""The probe deploy/embedding.yaml runs, run as the kubelet would: under mTLS it passes against a
real embedding process with the pod's certificate, and a client without one (what the kubelet's
plaintext grpc probe is) cannot get an answer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from memex.shared import certs
from memex.testing import REPO_ROOT, free_port

pytestmark = pytest.mark.e2e


def manifest_probe(kind: str) -> list[str]:
    """The exec command of the embedding container's ``kind`` probe in deploy/embedding.yaml."""
    documents = yaml.safe_load_all((REPO_ROOT / "deploy" / "embedding.yaml").read_text())
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    container = next(
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "embedding"
    )
    return list(container[kind]["exec"]["command"])


@pytest.fixture
def mtls_embedder(model_dir: Path, tmp_path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """An embedding process under MEMEX_INTERNAL_AUTH=mtls: its port and its environment."""
    tls_dir = certs.issue(tmp_path / "certs", ["embedding"]).service_dirs["embedding"]
    port = free_port()
    env = {
        **os.environ,
        "MEMEX_INTERNAL_AUTH": "mtls",
        "MEMEX_INTERNAL_TLS_DIR": str(tls_dir),
        "MEMEX_EMBEDDING_PORT": str(port),
        "MEMEX_EMBEDDING_MODEL_DIR": str(model_dir),
    }
    with open(tmp_path / "embedding.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "memex.embedding"], env=env, stdout=log, stderr=log
        )
        yield port, env
        process.kill()
        process.wait(10)


def run_probe(
    command: list[str], port: int, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    # The manifest's python and port, made this machine's.
    argv = [sys.executable if a == "python" else a.replace(":50051", f":{port}") for a in command]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)


def test_the_manifests_probe_passes_with_the_pods_certificate_only(
    mtls_embedder: tuple[int, dict[str, str]],
) -> None:
    port, env = mtls_embedder
    readiness = manifest_probe("readinessProbe")
    assert readiness[:3] == ["python", "-m", "memex.shared.health"], readiness
    deadline = time.monotonic() + 90
    while (probe := run_probe(readiness, port, env)).returncode != 0:
        assert time.monotonic() < deadline, f"readiness probe never passed: {probe.stderr}"
        time.sleep(0.5)
    assert run_probe(manifest_probe("livenessProbe"), port, env).returncode == 0

    # Without the certificate (a plaintext client, like the kubelet's grpc probe) no answer comes.
    plaintext = {**env, "MEMEX_INTERNAL_AUTH": "none"}
    refused = run_probe(readiness, port, plaintext)
    assert refused.returncode == 1
    assert "UNREACHABLE" in refused.stderr

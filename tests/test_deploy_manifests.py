"""The manifests in deploy/ pass `make deploy-check`: decoded strictly against the Kubernetes API
types (k8s.io/api, a Go test in deploy/check) and every reference between them holds. The Go test
carries its own failing cases (deploy/check/testdata/bad), so this run proves them too."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from memex.shared.testing import REPO_ROOT


# On a fresh machine the first run compiles k8s.io/api and its dependencies (minutes on 2 cores).
@pytest.mark.timeout(900)
def test_deploy_check_passes() -> None:
    make = shutil.which("make")
    assert make, "make is not installed"
    done = subprocess.run(
        [make, "--no-print-directory", "deploy-check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, (
        f"make deploy-check failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    )
    assert "ok" in done.stdout, done.stdout

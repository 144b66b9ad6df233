"""The manifests in deploy/ pass `make deploy-check`: decoded strictly against the Kubernetes API
types (k8s.io/api, a Go test in deploy/check) and every reference between them holds. The Go test
carries its own failing cases (deploy/check/testdata/bad), so this run proves them too.

The check starts in the background as soon as collection picks this test (the root conftest.py): on
a fresh machine it compiles k8s.io/api and its dependencies, minutes on 2 cores."""

from __future__ import annotations

import pytest


@pytest.mark.timeout(900)
def test_deploy_check_passes(deploy_check_outcome: tuple[int, str]) -> None:
    returncode, output = deploy_check_outcome
    assert returncode == 0, f"make deploy-check failed:\n{output[-12000:]}"
    assert "ok" in output, output

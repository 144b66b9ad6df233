"""The deploy check compiles k8s.io/api when Go's build cache is cold (minutes on 2 cores), so it
starts beside the suite, at the lowest priority, as soon as collection picks its test; the test
then takes its verdict (tests/test_deploy_manifests.py). At the root: a conftest in tests/ would
share its module name, tests.conftest, with services/orchestrator/tests/conftest.py."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from typing import IO

import pytest

from memex.shared.testing import REPO_ROOT

DEPLOY_CHECK_TEST = "tests/test_deploy_manifests.py::"
DeployCheck = tuple[subprocess.Popen[bytes], IO[bytes]]
DEPLOY_CHECK = pytest.StashKey[DeployCheck]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Starts `make deploy-check` in the background when its test is among those to run."""
    if session.config.option.collectonly or not any(
        item.nodeid.startswith(DEPLOY_CHECK_TEST) for item in session.items
    ):
        return
    make = shutil.which("make")
    if make is None:
        return  # the fixture says so
    log = tempfile.TemporaryFile()  # noqa: SIM115 (it outlives this hook: pytest_sessionfinish closes it)
    process = subprocess.Popen(
        ["nice", "-n", "19", make, "--no-print-directory", "deploy-check"],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    session.stash[DEPLOY_CHECK] = (process, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A run that ends before the deploy check's test (say, -x) leaves no build behind."""
    started = session.stash.get(DEPLOY_CHECK, None)
    if started is None:
        return
    process, log = started
    if process.poll() is None:
        process.kill()
        process.wait()
    log.close()


@pytest.fixture
def deploy_check_outcome(request: pytest.FixtureRequest) -> tuple[int, str]:
    """`make deploy-check`'s exit status and output: the background run's where collection
    started one, else a run now (a node id given on its own)."""
    started = request.session.stash.get(DEPLOY_CHECK, None)
    if started is None:
        make = shutil.which("make")
        assert make, "make is not installed"
        done = subprocess.run(
            [make, "--no-print-directory", "deploy-check"],
            cwd=REPO_ROOT,
            capture_output=True,
            timeout=900,
            check=False,
        )
        return done.returncode, (done.stdout + done.stderr).decode(errors="replace")
    process, log = started
    returncode = process.wait(timeout=900)
    log.seek(0)
    return returncode, log.read().decode(errors="replace")

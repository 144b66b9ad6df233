"""Every test runs with its own XDG_DATA_HOME (``pytest_configure``): memex's default data folder
(``memex.shared.settings.default_data_dir``) is then a temporary one, so a test that runs the
CLI or a service with default settings never writes into the person's own memex (a CLI test's
`memex index` once left its "last index" report in ~/.local/share/memex).

The deploy check compiles k8s.io/api when Go's build cache is cold (minutes on 2 cores), so it
starts beside the suite, at the lowest priority, as soon as collection picks its test; the test
then takes its verdict (tests/test_deploy_manifests.py). At the root: a conftest in tests/ would
share its module name, tests.conftest, with services/orchestrator/tests/conftest.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import IO

import pytest

from memex.shared.testing import REPO_ROOT

DEPLOY_CHECK_TEST = "tests/test_deploy_manifests.py::"
DeployCheck = tuple[subprocess.Popen[bytes], IO[bytes]]
DEPLOY_CHECK = pytest.StashKey[DeployCheck]()


_DATA_HOME = pytest.StashKey[tempfile.TemporaryDirectory[str]]()


def pytest_configure(config: pytest.Config) -> None:
    """Points XDG_DATA_HOME at a folder of this run's (each xdist worker has its own)."""
    data_home = tempfile.TemporaryDirectory(prefix="memex-test-data-")
    config.stash[_DATA_HOME] = data_home
    os.environ["XDG_DATA_HOME"] = data_home.name


def pytest_unconfigure(config: pytest.Config) -> None:
    """Removes the run's data folder."""
    data_home = config.stash.get(_DATA_HOME, None)
    if data_home is not None:
        data_home.cleanup()


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

"""Every test runs with its own XDG_DATA_HOME (``pytest_configure``): memex's default data folder
(``memex.shared.settings.default_data_dir``) is then a temporary one, so a test that runs the
CLI or a service with default settings never writes into the person's own memex (a CLI test's
`memex index` once left its "last index" report in ~/.local/share/memex).

The deploy check compiles k8s.io/api when Go's build cache is cold (minutes on 2 cores), so it
starts beside the suite, at the lowest priority, as soon as collection picks its test; the test
then takes its verdict (tests/test_deploy_manifests.py). At the root: a conftest in tests/ would
share its module name, tests.conftest, with services/orchestrator/tests/conftest.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from memex.testing import REPO_ROOT

DEPLOY_CHECK_TEST = "tests/test_deploy_manifests.py::"
# The run's deploy-check folder, made by the controlling process (the only process without
# xdist) and handed to the xdist workers through the environment they are started with: the
# first worker whose collection picks the test starts the one check of the run there, and the
# worker that runs the test reads its outcome from there. One check a run: each worker starting
# its own ran up to four builds at once.
DEPLOY_CHECK_DIR = "MEMEX_TEST_DEPLOY_CHECK_DIR"
DEPLOY_CHECK_SECONDS = 900
# The check ($0 is make, $1 the folder): its output, then its exit status, go to files there, so
# the process that runs the test reads them whichever process started it.
DEPLOY_CHECK_SCRIPT = (
    'nice -n 19 "$0" --no-print-directory deploy-check >"$1/output" 2>&1; echo $? >"$1/status"'
)

_DATA_HOME = pytest.StashKey[tempfile.TemporaryDirectory[str]]()
_DEPLOY_CHECK = pytest.StashKey[subprocess.Popen[bytes]]()


def _controls(config: pytest.Config) -> bool:
    """Whether this process controls the run (it is no xdist worker)."""
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """Points XDG_DATA_HOME at a folder of this run's (each xdist worker has its own); the
    controlling process makes the run's deploy-check folder before any worker starts."""
    data_home = tempfile.TemporaryDirectory(prefix="memex-test-data-")
    config.stash[_DATA_HOME] = data_home
    os.environ["XDG_DATA_HOME"] = data_home.name
    if _controls(config):
        os.environ[DEPLOY_CHECK_DIR] = tempfile.mkdtemp(prefix="memex-deploy-check-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Removes the run's data folder; the controlling process stops a deploy check still running
    (a run cut short, say by -x) and removes its folder."""
    data_home = config.stash.get(_DATA_HOME, None)
    if data_home is not None:
        data_home.cleanup()
    folder = os.environ.get(DEPLOY_CHECK_DIR)
    if not _controls(config) or not folder:
        return
    pid_file = Path(folder, "pid")
    if pid_file.exists() and not Path(folder, "status").exists():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)  # make, and what it runs
    shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Starts `make deploy-check` in the background, once a run, when its test is among those
    to run."""
    folder = os.environ.get(DEPLOY_CHECK_DIR)
    if (
        session.config.option.collectonly
        or not folder
        or not any(item.nodeid.startswith(DEPLOY_CHECK_TEST) for item in session.items)
    ):
        return
    make = shutil.which("make")
    if make is None:
        return  # the fixture says so
    try:
        Path(folder, "claimed").mkdir()  # atomic: one process of the run gets it
    except FileExistsError:
        return
    process = subprocess.Popen(
        ["sh", "-c", DEPLOY_CHECK_SCRIPT, make, folder],
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, which unconfigure can stop whole
    )
    Path(folder, "pid").write_text(str(process.pid))
    session.stash[_DEPLOY_CHECK] = process  # held while this process lives: it may outlive it


@pytest.fixture
def deploy_check_outcome() -> tuple[int, str]:
    """`make deploy-check`'s exit status and output: the run's background check where one was
    started, else a run now."""
    folder = os.environ.get(DEPLOY_CHECK_DIR)
    make = shutil.which("make")
    assert make, "make is not installed"
    if not folder or not Path(folder, "claimed").exists():
        done = subprocess.run(
            [make, "--no-print-directory", "deploy-check"],
            cwd=REPO_ROOT,
            capture_output=True,
            timeout=DEPLOY_CHECK_SECONDS,
            check=False,
        )
        return done.returncode, (done.stdout + done.stderr).decode(errors="replace")
    status = Path(folder, "status")
    deadline = time.monotonic() + DEPLOY_CHECK_SECONDS
    while not status.exists() or not status.read_text().strip():
        assert time.monotonic() < deadline, "make deploy-check did not finish in time"
        time.sleep(1)
    output = Path(folder, "output").read_text(errors="replace")
    return int(status.read_text()), output

"""`python -m memex.orchestrator.state.postgres_server`, the stack's local PostgreSQL: it serves, and
``postgres`` (started through the module's ``exec`` form, with no preexec_fn) is its own child,
runs as the cluster's owner, and dies with it when it is killed."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from memex.orchestrator.state import postgres_server
from memex.shared.pgcluster import Cluster, find_bin_dir, owner
from memex.testing import free_port

pytestmark = pytest.mark.timeout(120)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError):  # a zombie not yet reaped by init is dead
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    return False


def _until(check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds:.0f}s")


def test_the_launch_command_names_no_user_for_a_normal_one_and_checks_its_form() -> None:
    cluster = Cluster(Path("/srv/pg"), 5432, Path("/usr/lib/postgresql/15/bin"))
    command = postgres_server.server_launch(cluster)
    assert command[:5] == [sys.executable, "-m", "memex.shared.supervised", "exec",
                           str(os.getpid())]  # fmt: skip
    assert command[5] == (owner() or "") and command[6] == "--"
    assert command[7:] == cluster.server_command()
    bad = subprocess.run(
        [sys.executable, "-m", "memex.shared.supervised", "exec", "x"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode != 0 and "usage:" in bad.stderr


def test_postgres_serves_as_its_child_and_dies_with_it() -> None:
    if find_bin_dir() is None:
        pytest.skip("PostgreSQL's binaries are missing: `make postgres`")
    # Under the system temp dir, not pytest's (0700 under root), for the unprivileged owner.
    root = Path(tempfile.mkdtemp(prefix="memex-pgserver-"))
    port = free_port()
    env = {
        **os.environ,
        "MEMEX_POSTGRES_DIR": str(root),
        "MEMEX_POSTGRES_PORT": str(port),
        "MEMEX_POSTGRES_HEALTH_PORT": str(free_port()),
    }
    launcher = subprocess.Popen(
        [sys.executable, "-m", "memex.orchestrator.state.postgres_server"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    server = 0
    try:
        url = f"postgresql://memex@127.0.0.1:{port}/memex"

        def answers() -> bool:
            assert launcher.poll() is None, launcher.stderr.read() if launcher.stderr else ""
            try:
                with psycopg.connect(url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
            except psycopg.Error:
                return False
            return True

        _until(answers, 90)
        server = int((root / "data" / "postmaster.pid").read_text().split()[0])
        status = Path(f"/proc/{server}/status").read_text()
        ppid = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        uid = next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:"))
        assert int(ppid) == launcher.pid  # exec'd in the launcher's child: postgres itself
        assert Path(f"/proc/{server}/exe").resolve().name == "postgres"
        account = owner()
        expected = pwd.getpwnam(account).pw_uid if account else os.getuid()
        assert int(uid) == expected

        launcher.send_signal(signal.SIGKILL)  # no shutdown: only the death signal stops it
        launcher.wait(10)
        _until(lambda: not _alive(server), 30)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(10)
        if server and _alive(server):
            os.kill(server, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)

"""A supervised child (``memex.shared.supervised``): it runs its module, and dies with its parent."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

LAUNCH = [sys.executable, "-m", "memex.shared.supervised"]


def test_the_module_runs_as_main_with_its_arguments() -> None:
    done = subprocess.run(
        [*LAUNCH, str(os.getpid()), "timeit", "-n", "1", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "1 loop" in done.stdout


def test_a_child_whose_supervisor_is_already_gone_does_not_start() -> None:
    done = subprocess.run([*LAUNCH, "1", "timeit"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "is gone; not starting" in done.stderr
    bad = subprocess.run([*LAUNCH, "timeit"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "usage:" in bad.stderr


def test_a_child_dies_with_its_supervisor(tmp_path: Path) -> None:
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(120)\n")
    supervisor = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        child = subprocess.Popen({LAUNCH!r} + [str(os.getpid()), "sleeper"])
        print(child.pid, flush=True)
        time.sleep(120)
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    parent = subprocess.Popen(
        [sys.executable, "-c", supervisor], stdout=subprocess.PIPE, text=True, env=env
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1)  # the child has asked for its parent's death signal
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        # a dead child not yet reaped (its parent, init, reaps it) still answers kill 0
        with contextlib.suppress(FileNotFoundError):
            if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
                return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the child outlived its supervisor")

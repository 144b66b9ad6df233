"""Runs a module as a child of memex's supervisor that dies with it:
``python -m memex.shared.supervised PARENT_PID MODULE``.

The child asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), then runs
MODULE as ``__main__`` in the same interpreter. Asked for in the child itself, not in a
``preexec_fn`` between fork and exec: a ``preexec_fn`` makes Python fork where it would vfork,
and a fork runs gRPC's fork handlers in the child, which aborted a child at start (SIGABRT, "epoll
wait error: Bad file descriptor") when the parent's gRPC threads were busy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import runpy
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGTERM this process when its parent dies; exit now if ``parent`` is already gone (it
    died before the request was made, and this process was handed to another)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        sys.exit(f"the supervisor (pid {parent}) is gone; not starting")


def main() -> None:
    """Entry point: PARENT_PID MODULE [ARGS...]."""
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m memex.shared.supervised PARENT_PID MODULE [ARGS...]")
    parent, module = int(sys.argv[1]), sys.argv[2]
    die_with_parent(parent)
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

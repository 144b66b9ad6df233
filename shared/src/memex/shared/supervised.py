"""Runs a module as a child of memex's supervisor that dies with it:
``python -m memex.shared.supervised PARENT_PID MODULE``; or, as
``python -m memex.shared.supervised exec PARENT_PID USER -- PROGRAM [ARGS...]``, becomes a
program run as another user that dies with its parent (the local PostgreSQL's server).

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
import pwd
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


def exec_form(parent: int, user: str | None, program: list[str]) -> list[str]:
    """The command line that runs ``program`` as ``user`` (None: this process's own) as a child
    of ``parent`` that dies with it (see :func:`exec_as_child`)."""
    return [sys.executable, "-m", __name__, "exec", str(parent), user or "", "--", *program]


def exec_as_child(argv: list[str]) -> None:
    """``PARENT_PID USER -- PROGRAM [ARGS...]``: becomes USER (when one is named), asks for
    SIGTERM when PARENT_PID dies (after the change of user, which would clear it), and execs
    PROGRAM in this process. Neither ``preexec_fn`` nor ``user=`` is needed by whoever spawns it,
    so it is spawned with vfork (see the module's docstring). Exits with a message on a malformed
    command line."""
    if len(argv) < 4 or not argv[0].isdigit() or argv[2] != "--":
        sys.exit(f"usage: python -m {__name__} exec PARENT_PID USER -- PROGRAM [ARGS...]")
    parent, user, command = int(argv[0]), argv[1], argv[3:]
    if user:
        account = pwd.getpwnam(user)
        os.initgroups(user, account.pw_gid)
        os.setgid(account.pw_gid)
        os.setuid(account.pw_uid)
    die_with_parent(parent)
    os.execv(command[0], command)


def main() -> None:
    """Entry point: PARENT_PID MODULE [ARGS...], or exec PARENT_PID USER -- PROGRAM [ARGS...]."""
    if sys.argv[1:2] == ["exec"]:
        exec_as_child(sys.argv[2:])
        return
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m memex.shared.supervised PARENT_PID MODULE [ARGS...]")
    parent, module = int(sys.argv[1]), sys.argv[2]
    die_with_parent(parent)
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

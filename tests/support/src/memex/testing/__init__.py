"""Helpers for tests of memex services: real servers on free loopback ports.

Used by every service's tests, so they live in a distribution of their own (memex-testing,
installed for development and CI only) rather than in one conftest or in the library.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from memex.shared.pgcluster import INSTALL_HINT, Cluster, find_bin_dir, give_to_owner
from memex.shared.server import GrpcService, RunningServer

REPO_ROOT = Path(__file__).resolve().parents[5]  # tests/support/src/memex/testing/
SHARED_DATA = REPO_ROOT.parent / "shared"


# Test ports are drawn below Linux's ephemeral range (32768-60999), each pytest-xdist worker
# from its own block. A port the kernel hands out for bind(0) is released when it is drawn and
# can be handed out again at once: as the local port of any process's outgoing connection, or to
# a second worker drawing ports for its own stack (a CI run with two e2e workers failed on that:
# an orchestrator's metrics port was in use by the time it bound it). Below the ephemeral range
# the kernel gives no port to a connection, and no two workers draw from the same block; each
# port is still checked free by binding it. Every default port of the stack lies outside the
# blocks, so a test that pins some ports and leaves the rest at their defaults never draws one.
PORT_BLOCK = 3000
PORT_BLOCKS = 4  # the unit phase's most workers (--maxprocesses=4)
PORT_BASE = 32768 - PORT_BLOCK * PORT_BLOCKS  # 20768: the blocks end where the range starts
_drawn = itertools.count(random.randrange(PORT_BLOCK))  # two processes of one worker differ


def port_block() -> range:
    """The ports this process draws from: its pytest-xdist worker's block (gw0, gw1, ...), the
    first block outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
    index = int(worker) % PORT_BLOCKS if worker.isdigit() else 0
    start = PORT_BASE + index * PORT_BLOCK
    return range(start, start + PORT_BLOCK)


def free_port() -> int:
    """A TCP port of this worker's block that was free on loopback a moment ago."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports of this worker's block (``port_block``) that were free on
    loopback a moment ago. Every socket stays bound until all are chosen, so a port in use by
    anyone is passed over."""
    block = port_block()
    with contextlib.ExitStack() as held:
        chosen: list[int] = []
        for _ in block:
            if len(chosen) == count:
                break
            port = block[next(_drawn) % len(block)]
            sock = held.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or still in TIME_WAIT from an earlier stack
            chosen.append(port)
    if len(chosen) < count:
        raise RuntimeError(f"no {count} free ports left in {block}")
    return chosen


def require(path: Path, why: str) -> Path:
    """Returns ``path`` if it exists. Otherwise the test fails under CI (where everything must be
    prepared) and is skipped elsewhere, with ``why`` saying how to prepare it."""
    if path.exists():
        return path
    _missing(f"{path} is missing: {why}")


def _missing(message: str) -> NoReturn:
    """Fails under CI (where everything must be prepared), skips elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def private_postgres() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster: ``initdb`` in a fresh temp dir, served on 127.0.0.1 at a
    free port with its socket in that dir, the memex database created; stopped and removed when
    the block ends. Skipped (failed under CI) when PostgreSQL's binaries are missing. The dir is
    made under the system temp dir, not pytest's (mode 0700 under root), so that the unprivileged
    account the cluster runs as when root starts it can reach it."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        _missing(f"PostgreSQL's initdb, pg_ctl and postgres were not found: {INSTALL_HINT}")
    root = Path(tempfile.mkdtemp(prefix="memex-pg-"))
    give_to_owner(root)
    cluster = Cluster(root, free_port(), bin_dir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def shared_data(relative: str) -> Path:
    """A file of the reference data in ../shared beside the checkout."""
    return require(
        SHARED_DATA / relative, "the reference data ../shared is not beside this checkout"
    )


async def _first(task: asyncio.Task[None], awaited: asyncio.Future[Any], timeout: float) -> None:
    """Waits for ``awaited``; if the service's task ends first, raises what ended it."""
    await asyncio.wait({task, awaited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if awaited.done():
        return
    if task.done():
        task.result()
        raise RuntimeError("the service stopped before it was ready")
    raise TimeoutError(f"the service was not ready within {timeout:.0f}s")


@contextlib.asynccontextmanager
async def serving(service: GrpcService[Any], *, ready: bool = True) -> AsyncIterator[RunningServer]:
    """Runs ``service`` in this event loop until the block ends, then stops it gracefully."""
    task = asyncio.create_task(service.run(handle_signals=False))
    await _first(task, service.started, 30)
    running = service.started.result()
    try:
        if ready:
            await _first(task, asyncio.ensure_future(running.ready.wait()), 60)
        yield running
    finally:
        running.stop()
        await asyncio.wait_for(task, 60)

"""Free loopback ports for tests: each pytest-xdist worker draws from its own block."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import socket

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

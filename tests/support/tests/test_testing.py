"""The test helpers' own promises."""

from __future__ import annotations

import itertools
import socket

import pytest

from memex.testing import free_ports, port_block, ports


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    drawn = free_ports(64)
    assert len(set(drawn)) == 64
    assert all(port in port_block() and port < 32768 for port in drawn)


@pytest.mark.parametrize(("worker", "block"), [("gw0", 0), ("gw1", 1), ("gw5", 1), ("", 0)])
def test_each_xdist_worker_draws_from_its_own_block(
    monkeypatch: pytest.MonkeyPatch, worker: str, block: int
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    start = ports.PORT_BASE + block * ports.PORT_BLOCK
    assert port_block() == range(start, start + ports.PORT_BLOCK)
    assert all(port in port_block() for port in free_ports(8))


def test_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    in_use = free_ports(1)[0]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", in_use))
        holder.listen()
        offset = port_block().index(in_use)
        monkeypatch.setattr(ports, "_drawn", itertools.count(offset))  # it comes next
        [port] = free_ports(1)
        assert port != in_use and port in port_block()

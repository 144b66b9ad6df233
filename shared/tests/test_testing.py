"""The test helpers' own promises."""

from __future__ import annotations

import socket

import pytest

from memex.shared.testing import STACK_DEFAULT_PORTS, free_ports


def test_free_ports_are_distinct_and_never_a_stack_default() -> None:
    ports = free_ports(64)
    assert len(set(ports)) == 64
    assert not set(ports) & STACK_DEFAULT_PORTS


def test_a_stack_default_handed_out_by_the_kernel_is_passed_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handed_out = iter([50055, 50054, 41000, 41001])

    class Socket(socket.socket):
        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", next(handed_out))

    monkeypatch.setattr(socket, "socket", Socket)  # as free_ports opens them
    assert free_ports(2) == [41000, 41001]

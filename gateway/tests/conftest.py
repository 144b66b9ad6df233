"""Fixtures of the gateway's tests (the harness itself is ``support/harness.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .support.harness import Gateway, running_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with default settings (loopback, keys optional), shared by a module."""
    with running_gateway(tmp_path_factory.mktemp("gateway"), rate_limit_per_minute=0) as g:
        yield g

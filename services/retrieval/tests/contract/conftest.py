"""Backend contract suite: every test here runs once per backend and expects the same results.

To add a backend, append a ``Backend`` to ``BACKENDS``: a name and an async context manager
factory that opens an empty store for vectors of ``DIM`` dimensions in a fresh directory.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest

from memex.retrieval.store.base import Store

# pytest runs with --import-mode=importlib, so test modules import the shared builders
# (contract_kit.py) through this path entry.
sys.path.insert(0, str(Path(__file__).parent))

DIM = 8


@contextlib.asynccontextmanager
async def _embedded(path: Path) -> AsyncIterator[Store]:
    from memex.retrieval.store.embedded import EmbeddedStore

    store = await EmbeddedStore.open(path / "store", DIM)
    try:
        yield store
    finally:
        await store.close()


@dataclass(frozen=True)
class Backend:
    """One storage backend under contract test."""

    name: str
    open: Callable[[Path], AbstractAsyncContextManager[Store]]
    marks: tuple[pytest.MarkDecorator, ...] = ()


BACKENDS: list[Backend] = [
    Backend("embedded", _embedded),
    # The Weaviate backend appends itself here (memex.retrieval.store.weaviate).
]


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An empty store of each backend in turn."""
    backend: Backend = request.param
    async with backend.open(tmp_path) as opened:
        yield opened


@pytest.fixture
def backend_open(
    request: pytest.FixtureRequest,
) -> Callable[[Path], AbstractAsyncContextManager[Store]]:
    """The opener of the current backend (for reopen/persistence tests); use with ``store``."""
    name = request.node.callspec.id.split("-")[0]
    return next(b.open for b in BACKENDS if b.name == name)

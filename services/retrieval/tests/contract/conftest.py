"""Backend contract suite: every test here runs once per backend and expects the same results.

To add a backend, append a ``Backend`` to ``BACKENDS``: a name and an async context manager
factory that opens an empty store for vectors of ``DIM`` dimensions in a fresh directory (it gets
the test's ``request`` too, to reach session fixtures such as the Weaviate server).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
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
async def _embedded(request: pytest.FixtureRequest, path: Path) -> AsyncIterator[Store]:
    from memex.retrieval.store.embedded import EmbeddedStore

    store = await EmbeddedStore.open(path / "store", DIM)
    try:
        yield store
    finally:
        await store.close()


@contextlib.asynccontextmanager
async def _weaviate(request: pytest.FixtureRequest, path: Path) -> AsyncIterator[Store]:
    """A store on the session's Weaviate server. Collections named after the test's directory
    keep tests apart on one server, and reopening the same directory finds the same data."""
    from memex.retrieval.store.weaviate import WeaviateStore

    server = request.getfixturevalue("weaviate_server")
    store = await WeaviateStore.connect(
        http_host=server.host,
        http_port=server.ports.http,
        grpc_port=server.ports.grpc,
        api_key=server.api_key,
        dimension=DIM,
        prefix="T" + hashlib.sha1(str(path).encode()).hexdigest()[:16],
    )
    try:
        yield store
    finally:
        await store.close()


Opener = Callable[[pytest.FixtureRequest, Path], AbstractAsyncContextManager[Store]]


@dataclass(frozen=True)
class Backend:
    """One storage backend under contract test."""

    name: str
    open: Opener
    marks: tuple[pytest.MarkDecorator, ...] = ()


BACKENDS: list[Backend] = [
    Backend("embedded", _embedded),
    Backend("weaviate", _weaviate),
]


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """An empty store of each backend in turn."""
    backend: Backend = request.param
    async with backend.open(request, tmp_path) as opened:
        yield opened


@pytest.fixture
def backend_open(
    request: pytest.FixtureRequest,
) -> Callable[[Path], AbstractAsyncContextManager[Store]]:
    """The opener of the current backend (for reopen/persistence tests); use with ``store``."""
    name = request.node.callspec.id.split("-")[0]
    return functools.partial(next(b.open for b in BACKENDS if b.name == name), request)

"""Fixtures: the real embedding service and the retrieval service, in-process on port 0, and
a real Weaviate server for the Weaviate backend."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from pydantic import SecretStr

from memex.embedding.config import EmbeddingSettings, default_model_dir
from memex.embedding.server import build as build_embedding
from memex.retrieval.config import RetrievalSettings
from memex.retrieval.server import build as build_retrieval
from memex.retrieval.v1 import retrieval_pb2_grpc
from memex.retrieval.weaviate_server import WeaviateServer
from memex.testing import require, serving
from memex.testing.retrieval import write


@pytest.fixture
async def embedding_addr() -> AsyncIterator[str]:
    """The real embedding service (the default catalogue model, prepared by `make models`)."""
    model = require(default_model_dir() / "model.onnx", "run `make models`").parent
    settings = EmbeddingSettings(port=0, model_dir=model)
    async with serving(build_embedding(settings)) as running:
        yield f"127.0.0.1:{running.port}"


@pytest.fixture(params=["embedded", "weaviate"])
def retrieval_settings(
    request: pytest.FixtureRequest, tmp_path: Path, embedding_addr: str
) -> RetrievalSettings:
    """Settings of a retrieval service with its own store, on each backend in turn (on
    Weaviate, collections named after the test's directory keep tests apart)."""
    backend: dict[str, object] = {}
    if request.param == "weaviate":
        server: WeaviateServer = request.getfixturevalue("weaviate_server")
        backend = {
            "store": "weaviate",
            "weaviate_host": server.host,
            "weaviate_http_port": server.ports.http,
            "weaviate_grpc_port": server.ports.grpc,
            "weaviate_api_key": SecretStr(server.api_key),
            "weaviate_collection_prefix": "S" + hashlib.sha1(bytes(tmp_path)).hexdigest()[:16],
        }
    return RetrievalSettings(
        port=0,
        embedding_addr=embedding_addr,
        store_dir=tmp_path / "store",
        recency_half_life_days=0,
        **backend,  # type: ignore[arg-type]
    )


@pytest.fixture
async def retrieval(
    retrieval_settings: RetrievalSettings,
) -> AsyncIterator[retrieval_pb2_grpc.RetrievalServiceAsyncStub]:
    """A stub of a running retrieval service."""
    async with (
        serving(build_retrieval(retrieval_settings)) as running,
        grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel,
    ):
        yield retrieval_pb2_grpc.RetrievalServiceStub(channel)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A small Obsidian-style vault with records."""
    root = tmp_path / "vault"
    write(
        root,
        "Alice Smith.md",
        """
        ---
        title: Alice Smith
        entity: alice
        aliases: [Ali]
        tags: [people]
        date: 2024-01-10
        ---
        # Alice Smith
        My sister. She lives in Lisbon and loves sailing.
        """,
    )
    write(
        root,
        "journal/2024-03-02.md",
        """
        ---
        date: 2024-03-02
        tags: [journal]
        ---
        # Saturday
        Went sailing with Alice on the Tagus; the wind was strong. See [[Alice Smith|my sister]].

        ## Food
        We ate grilled sardines at the harbour.

        ```
        [[Not A Link]] inside code
        ```
        """,
    )
    write(
        root,
        "projects/Garden.md",
        """
        ---
        date: 2023-05-01
        salience: 0.9
        ---
        # Garden plan
        Plant tomatoes and basil in April. Compost every week. #gardening
        ![[Garden photo.png]]
        """,
    )
    write(
        root,
        "private/Health.md",
        """
        ---
        date: 2024-02-01
        ---
        Blood pressure readings were high in February; the doctor suggested less salt.
        """,
    )
    write(root, "Broken.md", "---\ntitle: [unclosed\n---\nBody about quantum tomatoes.\n")
    write(
        root,
        "records/entities.jsonl",
        '{"id": "alice", "name": "Alice Smith", "aliases": ["Ali"], "kind": "person"}\n'
        '{"id": "bob", "name": "Bob Jones", "kind": "person"}\n',
    )
    write(
        root,
        "records/events.jsonl",
        '{"id": "e1", "title": "Sailing trip", "date": "2024-03-02", "people": ["alice"]}\n',
    )
    write(
        root,
        "records/beliefs.jsonl",
        '{"id": "b1", "statement": "Sailing makes me calm", "status": "active", '
        '"confidence": 0.8}\n'
        '{"id": "b2", "statement": "Sailing is dangerous", "status": "contested"}\n',
    )
    write(
        root,
        "records/inbox.jsonl",
        '{"id": "i1", "title": "Call Alice about the boat", "status": "open", '
        '"date": "2024-03-05"}\n'
        '{"id": "i2", "title": "Pay taxes", "status": "done", "date": "2024-01-01"}\n',
    )
    write(root, "records/secrets.jsonl", '{"id": "x"}\n')
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.md").write_text("hidden config")
    (root / "bin.md").write_bytes(b"\x00\x01\x02binary")
    (root / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (root / "loop").symlink_to(root)
    return root


@pytest.fixture(scope="session")
def weaviate_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateServer]:
    """One Weaviate (built by `make weaviate`) on loopback for the session: its own data dir,
    free ports, a random API key. A missing binary is an error that says to run
    `make weaviate`, never a skip."""
    with WeaviateServer(tmp_path_factory.mktemp("weaviate") / "data") as server:
        yield server

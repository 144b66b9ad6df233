"""The Weaviate launcher: pinned version, safe environment, and a real server's auth and restart."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from memex.retrieval.store.weaviate_schema import weaviate_tenant
from memex.retrieval.weaviate_server import (
    WEAVIATE_VERSION,
    WeaviatePorts,
    WeaviateServer,
    find_binary,
    is_ready,
    server_env,
)
from memex.shared.errors import FailedPrecondition

ROOT = Path(__file__).resolve().parents[3]


def test_makefile_builds_the_pinned_version() -> None:
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^WEAVIATE_VERSION := (\S+)$", makefile, re.MULTILINE)
    assert match is not None
    assert match.group(1) == WEAVIATE_VERSION


def test_environment_is_private_and_quiet(tmp_path: Path) -> None:
    ports = WeaviatePorts.free()
    assert len({*vars(ports).values()}) == 6
    env = server_env(tmp_path, ports, "k3y", "127.0.0.1")
    assert env["DISABLE_TELEMETRY"] == "true"
    assert env["AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED"] == "false"
    assert env["AUTHENTICATION_APIKEY_ALLOWED_KEYS"] == "k3y"
    assert env["CLUSTER_BIND_ADDR"] == "127.0.0.1"
    assert env["GO_PROFILING_DISABLE"] == "true"
    assert len(env["CLUSTER_BASIC_AUTH_PASSWORD"]) == 64  # the internal data API is not open
    assert env["DEFAULT_VECTORIZER_MODULE"] == "none"
    assert env["ENABLE_MODULES"] == ""


def test_missing_binary_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition, match="make weaviate"):
        find_binary(tmp_path / "nope")


def test_tenant_names_map_safely() -> None:
    assert weaviate_tenant("default") == "default"
    odd = weaviate_tenant("alice@example.com")
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", odd)
    assert odd != weaviate_tenant("bob@example.com")
    assert weaviate_tenant("h-" + "0" * 40) != "h-" + "0" * 40  # cannot collide with a hash


def _get(url: str, key: str | None = None) -> int:
    request = urllib.request.Request(url)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_real_server_requires_the_api_key(weaviate_server: WeaviateServer) -> None:
    assert is_ready(weaviate_server.url)
    schema = weaviate_server.url + "/v1/schema"
    assert _get(schema) == 401
    assert _get(schema, "wrong-key") == 401
    assert _get(schema, weaviate_server.api_key) == 200


@pytest.mark.slow
def test_server_restarts_on_its_data_dir(tmp_path: Path) -> None:
    server = WeaviateServer(tmp_path / "data")
    with server:
        assert is_ready(server.url)
    assert not is_ready(server.url)
    with WeaviateServer(tmp_path / "data", api_key=server.api_key, ports=server.ports) as again:
        assert _get(again.url + "/v1/schema", again.api_key) == 200

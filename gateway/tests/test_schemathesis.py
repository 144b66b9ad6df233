"""Property tests from the published OpenAPI spec: no 500s, and every response is one the spec
documents (status, content type, schema), for valid and invalid generated requests alike.

The spec is the app's own (built at collection time, so each operation is a test of its own);
the requests go to a running gateway in front of the fake services. That gateway requires keys,
as the spec says: generated requests carry a valid one, and schemathesis checks that requests
without it are refused.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from memex.gateway import apikeys
from memex.gateway.app import create_app
from memex.gateway.config import GatewaySettings

from .support.harness import Gateway, running_gateway

schema = schemathesis.openapi.from_dict(create_app(GatewaySettings()).openapi())
# Known at collection time, when schemathesis already builds some cases.
TOKEN = apikeys.PREFIX + secrets.token_urlsafe(32)


@schema.auth()
class BearerKey:
    """Puts the test key on every generated request."""

    def get(self, case: Any, context: Any) -> str:
        return TOKEN

    def set(self, case: Any, data: str, context: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture(scope="module")
def keyed_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp: Path = tmp_path_factory.mktemp("schemathesis")
    key = apikeys.ApiKey("schemathesis", apikeys.hash_token(TOKEN), "2026-01-01T00:00:00Z", "mx_")
    (tmp / "keys.json").write_text(json.dumps({"keys": [dataclasses.asdict(key)]}))
    with running_gateway(tmp, require_keys=True, rate_limit_per_minute=0) as gateway:
        yield gateway


@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_honours_its_spec(case: schemathesis.Case[Any], keyed_gateway: Gateway) -> None:
    # OpenAI's message schema cannot say "at least one user message with text", so a schema-valid
    # request may rightly get a 400 there; every other check still applies to it.
    excluded = (
        [schemathesis.checks.positive_data_acceptance]
        if case.operation.path == "/v1/chat/completions"
        else []
    )
    case.call_and_validate(base_url=keyed_gateway.url, timeout=30, excluded_checks=excluded)

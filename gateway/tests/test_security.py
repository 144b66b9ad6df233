"""API keys, the startup refusal, body size limits, the per-key rate limit, CORS, the web page."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memex.gateway import apikeys
from memex.gateway.app import StartupError, check_startup
from memex.gateway.config import GatewaySettings, is_loopback
from memex.gateway.security import RateLimiter
from memex.testing import free_port

from .support.harness import running_gateway


def test_keys_are_required_by_setting_and_accepted_when_valid(tmp_path: Path) -> None:
    token = apikeys.create_key(tmp_path / "keys.json", "laptop")
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        missing = c.post("/v1/ask", json={"question": "deposit?"})
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        assert "memex keys create" in missing.json()["error"]["message"]
        wrong = c.post(
            "/v1/ask", json={"question": "q"}, headers={"Authorization": "Bearer mx_nope"}
        )
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "UNAUTHENTICATED"
        good = {"Authorization": f"Bearer {token}"}
        assert c.post("/v1/ask", json={"question": "q"}, headers=good).status_code == 200
        with c.stream("POST", "/v1/chat", json={"message": "hi"}, headers=good) as r:
            assert r.status_code == 200
        assert c.get("/metrics").status_code == 401
        assert c.get("/healthz").status_code == 200  # probes need no key

        # Revoking takes effect without a restart: the file is re-read when it changes.
        apikeys.revoke_key(tmp_path / "keys.json", "laptop")
        assert c.post("/v1/ask", json={"question": "q"}, headers=good).status_code == 401


def test_on_loopback_without_required_keys_any_bearer_is_tolerated(tmp_path: Path) -> None:
    with (
        running_gateway(tmp_path, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        assert c.post("/v1/ask", json={"question": "q"}).status_code == 200
        r = c.post("/v1/ask", json={"question": "q"}, headers={"Authorization": "Bearer sk-x"})
        assert r.status_code == 200


def test_the_gateway_refuses_to_start_exposed_without_keys(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    check_startup(GatewaySettings(host="127.0.0.1", keys_file=keys))  # loopback: fine
    with pytest.raises(StartupError, match="memex keys create"):
        check_startup(GatewaySettings(host="0.0.0.0", keys_file=keys))
    with pytest.raises(StartupError, match="REQUIRE_KEYS"):
        check_startup(GatewaySettings(host="127.0.0.1", require_keys=True, keys_file=keys))
    apikeys.create_key(keys, "server")
    check_startup(GatewaySettings(host="0.0.0.0", keys_file=keys))
    assert GatewaySettings(host="0.0.0.0", keys_file=keys).keys_required

    # And the process says so and exits, rather than serving.
    env = {
        **os.environ,
        "MEMEX_GATEWAY_HOST": "0.0.0.0",
        "MEMEX_GATEWAY_PORT": "0",
        "MEMEX_GATEWAY_KEYS_FILE": str(tmp_path / "none.json"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "memex.gateway"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "API keys are required" in done.stderr and "0.0.0.0" in done.stderr


def test_oversized_bodies_are_413(tmp_path: Path) -> None:
    with (
        running_gateway(tmp_path, max_body_bytes=1000, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        big = {"question": "x" * 2000}
        declared = c.post("/v1/ask", json=big)
        assert declared.status_code == 413
        assert declared.json()["error"]["message"] == "request body is larger than 1000 bytes"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
            yield b'{"question": "'
            for _ in range(20):
                yield b"y" * 100
            yield b'"}'

        streamed = c.post("/v1/ask", content=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
        assert c.post("/v1/ask", json={"question": "small"}).status_code == 200


def test_the_rate_limit_is_per_key_with_retry_after(tmp_path: Path) -> None:
    first = apikeys.create_key(tmp_path / "keys.json", "one")
    second = apikeys.create_key(tmp_path / "keys.json", "two")
    with (
        running_gateway(tmp_path, rate_limit_per_minute=6, rate_limit_burst=3) as g,
        httpx.Client(base_url=g.url) as c,
    ):

        def ask(token: str) -> httpx.Response:
            return c.post(
                "/v1/ask", json={"question": "q"}, headers={"Authorization": f"Bearer {token}"}
            )

        assert [ask(first).status_code for _ in range(3)] == [200, 200, 200]
        limited = ask(first)
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "RESOURCE_EXHAUSTED"
        assert 1 <= int(limited.headers["retry-after"]) <= 10
        assert ask(second).status_code == 200  # another key has its own bucket
        assert (
            "memex_gateway_rate_limited_total 1.0"
            in c.get("/metrics", headers={"Authorization": f"Bearer {second}"}).text
        )


def test_the_token_bucket_refills_at_its_rate() -> None:
    limiter = RateLimiter(per_minute=60, burst=2)
    assert limiter.take("a", now=0) == 0 and limiter.take("a", now=0) == 0
    assert limiter.take("a", now=0) == pytest.approx(1.0)
    assert limiter.take("a", now=0.5) == pytest.approx(0.5)
    assert limiter.take("a", now=1.5) == 0  # a second's refill
    assert RateLimiter(per_minute=0, burst=1).take("a", now=0) == 0  # 0 turns it off
    small = RateLimiter(per_minute=60, burst=1, max_callers=2)
    for caller in ("a", "b", "c"):
        small.take(caller, now=0)
    assert len(small._buckets) == 2


def test_cors_allows_only_the_configured_origins(tmp_path: Path) -> None:
    origin = "http://app.example"
    with (
        running_gateway(tmp_path, cors_origins=[origin], rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        preflight = c.options(
            "/v1/ask",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == origin
        r = c.post("/v1/ask", json={"question": "q"}, headers={"Origin": origin})
        assert r.headers["access-control-allow-origin"] == origin
        assert "x-request-id" in r.headers["access-control-expose-headers"].lower()

        other = c.options(
            "/v1/ask",
            headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert other.status_code == 400
        assert "access-control-allow-origin" not in other.headers
        plain = c.post("/v1/ask", json={"question": "q"}, headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in plain.headers


def test_the_web_page_and_its_static_files(tmp_path: Path) -> None:
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<!doctype html><title>memex</title>")
    (web / "app.js").write_text("console.log('memex')")
    with (
        running_gateway(tmp_path, web_dir=web, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        page = c.get("/")
        assert page.status_code == 200 and "<title>memex</title>" in page.text
        assert page.headers["content-type"].startswith("text/html")
        assert c.get("/notes/ep-1").text == page.text
        assert c.get("/static/app.js").text == "console.log('memex')"
        assert c.get("/static/missing.js").status_code == 404
    with (
        running_gateway(tmp_path, web_dir=tmp_path / "absent", rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url) as c,
    ):
        missing = c.get("/")
        assert missing.status_code == 404 and "not installed" in missing.json()["error"]["message"]


def test_a_deep_health_check_reports_a_service_that_is_down(tmp_path: Path) -> None:
    checks = {"orchestrator": "127.0.0.1:1", "weaviate": "http://127.0.0.1:1/ready"}
    with (
        running_gateway(tmp_path, health_checks=checks, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        assert c.get("/healthz").status_code == 200  # shallow stays up: the gateway answers
        deep = c.get("/healthz", params={"deep": "true"})
        assert deep.status_code == 503
        assert deep.json() == {
            "status": "degraded",
            "services": {"orchestrator": "UNREACHABLE", "weaviate": "UNREACHABLE"},
        }


def test_services_that_are_down_are_503_with_a_plain_message(tmp_path: Path) -> None:
    dead = f"127.0.0.1:{free_port()}"
    with (
        running_gateway(
            tmp_path, orchestrator_addr=dead, retrieval_addr=dead, rate_limit_per_minute=0
        ) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        for response in (
            c.post("/v1/ask", json={"question": "q"}),
            c.post("/v1/chat", json={"message": "hi"}),
            c.get("/v1/inbox"),
            c.get("/v1/conversations"),
        ):
            assert response.status_code == 503
            assert response.json()["error"] == {
                "code": "UNAVAILABLE",
                "message": "a memex service is not reachable; is the stack up (`memex status`)?",
            }


def test_a_call_past_its_deadline_is_504_and_is_cancelled(tmp_path: Path) -> None:
    with (
        running_gateway(tmp_path, request_timeout_seconds=0.5, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        r = c.post("/v1/ask", json={"question": "slow"})
        assert r.status_code == 504 and r.json()["error"]["code"] == "DEADLINE_EXCEEDED"
        assert g.orchestrator.ask_cancelled.wait(10)  # the service stopped working on it

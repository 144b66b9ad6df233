"""A streamed ask (`POST /v1/ask` with `"stream": true`): started, the draft's deltas, then the
checked result as server-sent events; errors before and after the first event; disconnect →
cancel; and the spec says so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .support.harness import Gateway, read_events


def ask(client: httpx.Client, **body: object) -> list[tuple[str, Any]]:
    with client.stream("POST", "/v1/ask", json={**body, "stream": True}) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return list(read_events(r.iter_lines()))


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        yield c


def test_a_streamed_ask_is_started_deltas_then_the_checked_result(
    client: httpx.Client, gateway: Gateway
) -> None:
    events = ask(client, question="How much did Graham return?", persona="skeptic")
    assert [name for name, _ in events] == ["started", "delta", "delta", "delta", "result"]
    assert events[0][1] == {
        "model": "fake",
        "persona": "skeptic",
        "sources": ["[[Flat lease]]"],
        "source_paths": ["home/Flat lease.md"],
    }
    draft = "".join(str(data["text"]) for name, data in events if name == "delta")
    assert draft == "Graham returned £1,030."
    # The result is exactly what the JSON ask answers.
    whole = client.post("/v1/ask", json={"question": "How much?", "persona": "skeptic"})
    assert events[-1][1] == whole.json()
    assert events[-1][1]["citations"][0]["support"] == "verbatim"


def test_a_streamed_ask_as_of_a_day_says_so_in_its_result(
    client: httpx.Client, gateway: Gateway
) -> None:
    events = ask(client, question="How much did Graham return?", as_of="2026-02-01")
    assert gateway.orchestrator.ask_requests[-1].as_of == "2026-02-01"
    assert events[-1][0] == "result" and events[-1][1]["as_of"] == "2026-02-01"
    # A malformed day is refused before the stream starts, as JSON.
    bad = client.post("/v1/ask", json={"question": "x", "as_of": "soon", "stream": True})
    assert bad.status_code == 400 and "as_of" in bad.json()["error"]["message"]


def test_a_first_draft_set_aside_is_a_redraft_event_before_the_new_draft(
    client: httpx.Client,
) -> None:
    events = ask(client, question="second look")
    names = [name for name, _ in events]
    assert names == ["started", "delta", "redraft", "delta", "delta", "delta", "result"]
    assert events[1][1] == {"text": "I don't know."}
    assert events[2][1] == {"reason": "reading all 4 sources"}
    assert events[-1][1]["answer"] == "Graham returned £1,030."


def test_without_stream_the_ask_is_one_json_answer(client: httpx.Client) -> None:
    r = client.post("/v1/ask", json={"question": "deposit?", "stream": False})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["answer"] == "Graham returned £1,030."


def test_a_refusal_before_the_first_event_is_an_http_status(client: httpx.Client) -> None:
    r = client.post("/v1/ask", json={"question": "status:INVALID_ARGUMENT", "stream": True})
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == {"error": {"code": "INVALID_ARGUMENT", "message": "as asked"}}
    r = client.post("/v1/ask", json={"question": "status:UNAVAILABLE", "stream": True})
    assert r.status_code == 503
    # Strict bodies: "stream" is a JSON boolean.
    r = client.post("/v1/ask", json={"question": "deposit?", "stream": "yes"})
    assert r.status_code == 400 and "stream" in r.json()["error"]["message"]


def test_an_error_after_the_first_event_is_a_terminal_error_event(client: httpx.Client) -> None:
    events = ask(client, question="fail after")
    assert [name for name, _ in events] == ["started", "delta", "error"]
    assert events[-1][1] == {"code": "UNAVAILABLE", "message": "reasoner gone"}


def test_a_client_that_leaves_mid_stream_cancels_the_ask(
    client: httpx.Client, gateway: Gateway
) -> None:
    gateway.orchestrator.ask_cancelled.clear()
    body = {"question": "slow words", "stream": True}
    with client.stream("POST", "/v1/ask", json=body) as r:
        events = read_events(r.iter_lines())
        assert next(events)[0] == "started"
        assert next(events)[0] == "delta"
    assert gateway.orchestrator.ask_cancelled.wait(10), "the ask outlived its client"
    gauge = 'memex_gateway_open_streams{route="/v1/ask"} 0.0'
    deadline = time.monotonic() + 10
    while gauge not in (metrics := client.get("/metrics").text) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gauge in metrics


def test_a_client_that_leaves_before_the_first_event_cancels_the_ask(gateway: Gateway) -> None:
    gateway.orchestrator.ask_cancelled.clear()
    with (
        httpx.Client(base_url=gateway.url, timeout=0.5) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.post("/v1/ask", json={"question": "slow", "stream": True})
    assert gateway.orchestrator.ask_cancelled.wait(10), "the ask outlived its client"


def test_the_spec_documents_both_answers(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    ok = spec["paths"]["/v1/ask"]["post"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"]["$ref"].endswith("AskResponse")
    events = ok["content"]["text/event-stream"]["schema"]["properties"]["event"]["enum"]
    assert events == ["started", "delta", "redraft", "result", "error"]
    body = spec["components"]["schemas"]["AskRequest"]["properties"]
    assert body["stream"]["type"] == "boolean"

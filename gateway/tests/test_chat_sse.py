"""Chat over server-sent events (SPEC B8): named events, one JSON object each, pings while idle,
an explicit terminal event, errors before and after the first event, and disconnect → cancel."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .support.harness import Gateway, read_events, running_gateway


def chat(client: httpx.Client, **body: object) -> list[tuple[str, Any]]:
    with client.stream("POST", "/v1/chat", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return list(read_events(r.iter_lines()))


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        yield c


def test_a_reply_is_meta_deltas_citations_done(client: httpx.Client, gateway: Gateway) -> None:
    events = chat(client, message="How much did Graham return?", persona="coach")
    names = [name for name, _ in events]
    assert names == ["meta", "delta", "delta", "delta", "citations", "done"]
    meta = events[0][1]
    assert meta["model"] == "fake" and meta["persona"] == "coach"
    text = "".join(str(data["text"]) for name, data in events if name == "delta")
    assert text == "Graham returned £1,030 of the deposit."
    assert events[4][1] == {
        "citations": [
            {
                "ref": "[[Flat lease]]",
                "item_id": "chunk-1",
                "episode_id": "ep-1",
                "path": "home/Flat lease.md",
                "quote": "return £1,030",
                "support": "verbatim",
                "support_label": "verbatim",
            }
        ],
        "withheld": 1,
    }
    assert set(events[5][1]) == {"message_id", "latency_ms", "chunks_considered"}

    # The conversation continues with the id from meta.
    again = chat(client, message="And the rest?", conversation_id=meta["conversation_id"])
    assert again[0][1]["conversation_id"] == meta["conversation_id"]
    assert gateway.orchestrator.chat_requests[-1].conversation_id == meta["conversation_id"]


def test_an_error_before_the_first_event_is_an_http_status(client: httpx.Client) -> None:
    r = client.post("/v1/chat", json={"message": "fail before"})
    assert r.status_code == 400
    assert r.json() == {
        "error": {"code": "INVALID_ARGUMENT", "message": "the message was refused as asked"}
    }
    assert client.post("/v1/chat", json={"message": ""}).status_code == 400


def test_an_error_after_the_first_event_is_a_terminal_error_event(client: httpx.Client) -> None:
    events = chat(client, message="fail after")
    assert [name for name, _ in events] == ["meta", "delta", "error"]
    assert events[-1][1] == {"code": "UNAVAILABLE", "message": "reasoner gone"}


def test_idle_streams_get_keep_alive_comments(tmp_path: Path) -> None:
    with (
        running_gateway(tmp_path, sse_ping_seconds=0.2, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as client,
    ):
        events = chat(client, message="idle")
    names = [name for name, _ in events]
    first_delta = names.index("delta")
    assert ("comment", "ping") in events[:first_delta], events
    # A ping may still slip out between `done` and the end of the stream on a busy machine.
    assert [name for name in names if name != "comment"][-1] == "done", events


def test_a_client_that_disconnects_cancels_the_grpc_call(
    client: httpx.Client, gateway: Gateway
) -> None:
    gateway.orchestrator.cancelled.clear()
    with client.stream("POST", "/v1/chat", json={"message": "slow"}) as r:
        events = read_events(r.iter_lines())
        assert next(events)[0] == "meta"
        assert next(events)[0] == "delta"
    # The response is closed: the fake's stream must see the cancellation promptly.
    assert gateway.orchestrator.cancelled.wait(10), "the gRPC call outlived its client"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        metrics = client.get("/metrics").text
        if 'memex_gateway_open_streams{route="/v1/chat"} 0.0' in metrics:
            break
        time.sleep(0.1)
    assert 'memex_gateway_open_streams{route="/v1/chat"} 0.0' in metrics


def test_a_client_that_gives_up_on_an_ask_cancels_it(gateway: Gateway) -> None:
    gateway.orchestrator.ask_cancelled.clear()
    with (
        httpx.Client(base_url=gateway.url, timeout=0.5) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.post("/v1/ask", json={"question": "slow"})
    assert gateway.orchestrator.ask_cancelled.wait(10), "the ask outlived its client"


def test_a_client_that_gives_up_on_a_completion_cancels_the_chat(gateway: Gateway) -> None:
    gateway.orchestrator.cancelled.clear()
    body = {"model": "memex", "messages": [{"role": "user", "content": "slow"}]}
    with (
        httpx.Client(base_url=gateway.url, timeout=0.5) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.post("/v1/chat/completions", json=body)
    assert gateway.orchestrator.cancelled.wait(10), "the chat outlived its client"

"""GET /v1/threads/{thread_id}/events (issue 37): a thread's turns as server-sent events, then
each change, then `deleted` when the thread is forgotten; 404 for an unknown thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .support.harness import Gateway, read_events


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        yield c


def test_a_thread_streams_its_turns_then_each_change_then_deleted(
    client: httpx.Client, gateway: Gateway
) -> None:
    turn = client.post("/v1/turns", json={"text": "What does the allotment cost?"}).json()["turn"]
    thread_id = turn["thread_id"]
    events: list[tuple[str, Any]] = []
    with client.stream("GET", f"/v1/threads/{thread_id}/events") as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        for name, data in read_events(r.iter_lines()):
            if name == "comment":
                continue
            events.append((name, data))
            if len(events) == 4:  # the question, thinking, answered, and its answer
                with httpx.Client(base_url=gateway.url, timeout=30) as other:
                    assert other.delete(f"/v1/threads/{thread_id}").status_code == 200
            if name in ("deleted", "error"):
                break

    names = [name for name, _ in events]
    assert names == ["turn", "turn", "turn", "turn", "deleted"]
    turns = [data for name, data in events if name == "turn"]
    assert [(t["turn"]["role"], t["turn"]["state"], t["current"]) for t in turns] == [
        ("user", "pending", True),
        ("user", "thinking", False),
        ("user", "answered", False),
        ("assistant", "answered", False),
    ]
    assert turns[0]["turn"] == turn
    assert events[-1][1] == {"thread_id": thread_id}


def test_an_unknown_thread_is_a_plain_404(client: httpx.Client) -> None:
    r = client.get("/v1/threads/no-such-thread/events")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/")
    assert "no-such-thread" in r.text


def test_the_route_is_in_the_openapi_spec(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    route = spec["paths"]["/v1/threads/{thread_id}/events"]["get"]
    assert "text/event-stream" in route["responses"]["200"]["content"]

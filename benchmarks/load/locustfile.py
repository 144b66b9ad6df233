"""The gateway under a realistic HTTP and SSE mix, for locust (`make load` runs it headless).

Each simulated user asks (streamed), chats (streamed), searches, queries records and queues turns,
with a pause of 1-3 s between; it runs each of them once first, then picks by weight. A streamed
request is read to its terminal event (`result` or `done`, or `error`) and reported twice: its
whole time (``... (stream)``), its time to the first event (``... (first event)``) and to the
first `delta` (``... (first words)``). A queued
turn is reported per request and once more as ``turn: queued -> answered``. Failures carry the HTTP
status (``HTTP 429``) or the SSE error code (``SSE RESOURCE_EXHAUSTED``), so the report can count
them by status.

    locust -f benchmarks/load/locustfile.py --headless -u 10 -r 2 -t 60s --host http://...
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import requests
from locust import HttpUser, between, task

QUESTIONS = [
    "How much is the allotment rent for plot 23B?",
    "How much of my deposit did Graham agree to give back, and why?",
    "What happened with the boiler in March 2025?",
    "How did the first week of the half-marathon plan go?",
    "What did the Warden usability testing find?",
    "What is pending in my inbox?",
    "Who is Ron Whitaker?",
    "What did I decide about the map view in Warden?",
]
SEARCHES = ["allotment tenancy", "deposit Graham", "boiler repair", "half marathon", "Warden"]
COLLECTIONS = ["inbox", "events", "entities", "beliefs"]
# A streamed answer must end well within this; a read that waits longer is a timeout failure.
STREAM_TIMEOUT = (5.0, 120.0)
JSON_TIMEOUT = 30.0
TURN_TIMEOUT_SECONDS = 120.0
TURN_POLL_SECONDS = 0.5


class StreamFailure(Exception):
    """A stream that failed: an HTTP status before it began, an `error` event, or no end."""


class MemexUser(HttpUser):
    """One person using memex: mostly reads and streamed answers, sometimes a queued turn."""

    wait_time = between(1, 3)

    def on_start(self) -> None:
        # Streams are read by a session of their own, so they are timed and reported here (to
        # the end of the stream), not by locust's client (which would stop at the headers).
        self.streams = requests.Session()
        # Every task once first, in a shuffled order, so even a short run covers the whole mix;
        # from then on locust picks by weight.
        first_round = [
            self.search,
            self.records,
            self.ask_stream,
            self.chat_stream,
            self.queued_turn,
        ]
        random.shuffle(first_round)
        for run_task in first_round:
            run_task()
            time.sleep(random.uniform(1, 3))

    def on_stop(self) -> None:
        self.streams.close()

    @task(3)
    def ask_stream(self) -> None:
        """POST /v1/ask with stream: started, deltas, then result (or error)."""
        body = {"question": random.choice(QUESTIONS), "stream": True}
        self._stream("/v1/ask", body, "POST /v1/ask", terminal={"result", "error"})

    @task(3)
    def chat_stream(self) -> None:
        """POST /v1/chat: meta, deltas, citations, then done (or error)."""
        body = {"message": random.choice(QUESTIONS)}
        self._stream("/v1/chat", body, "POST /v1/chat", terminal={"done", "error"})

    @task(4)
    def search(self) -> None:
        """POST /v1/search: hybrid search, no model call."""
        self._post("/v1/search", {"query": random.choice(SEARCHES), "limit": 8})

    @task(3)
    def records(self) -> None:
        """POST /v1/records/query: a structured read, no model call."""
        self._post("/v1/records/query", {"collection": random.choice(COLLECTIONS), "limit": 20})

    @task(1)
    def queued_turn(self) -> None:
        """POST /v1/turns, then GET /v1/turns/{id} until the worker answered it."""
        started = time.perf_counter()
        body = {"text": random.choice(QUESTIONS)}
        with self.client.post(
            "/v1/turns", name="POST /v1/turns", json=body, catch_response=True, timeout=JSON_TIMEOUT
        ) as reply:
            if not _judge(reply):
                return
            turn_id = reply.json()["turn"]["id"]
        state = "pending"
        while time.perf_counter() - started < TURN_TIMEOUT_SECONDS:
            time.sleep(TURN_POLL_SECONDS)
            with self.client.get(
                f"/v1/turns/{turn_id}",
                name="GET /v1/turns/{id}",
                catch_response=True,
                timeout=JSON_TIMEOUT,
            ) as reply:
                if not _judge(reply):
                    return
                state = reply.json()["turn"]["state"]
            if state in ("answered", "error"):
                break
        failure = None
        if state == "error":
            failure = StreamFailure("turn error")
        elif state != "answered":
            failure = StreamFailure("turn timeout")
        self._report("TURN", "turn: queued -> answered", started, failure)

    def _post(self, path: str, body: dict[str, Any]) -> None:
        """A JSON POST, judged by its status (reported as ``POST path``)."""
        with self.client.post(
            path, name=f"POST {path}", json=body, catch_response=True, timeout=JSON_TIMEOUT
        ) as reply:
            _judge(reply)

    def _stream(self, path: str, body: dict[str, Any], name: str, terminal: set[str]) -> None:
        """Reads one SSE stream to its terminal event; reports first-event and total time."""
        started = time.perf_counter()
        failure: Exception | None = None
        first_reported = words_reported = False
        assert self.host, "locust needs --host"
        try:
            with self.streams.post(
                self.host + path, json=body, stream=True, timeout=STREAM_TIMEOUT
            ) as reply:
                if reply.status_code != 200:
                    raise StreamFailure(f"HTTP {reply.status_code}")
                event = ""
                ended = False
                for raw in reply.iter_lines():
                    line = raw.decode()
                    if line.startswith("event:"):
                        event = line.removeprefix("event:").strip()
                        if not first_reported:
                            self._report("SSE", f"{name} (first event)", started, None)
                            first_reported = True
                        if event == "delta" and not words_reported:
                            self._report("SSE", f"{name} (first words)", started, None)
                            words_reported = True
                    elif line.startswith("data:") and event in terminal:
                        if event == "error":
                            code = json.loads(line.removeprefix("data:")).get("code", "?")
                            raise StreamFailure(f"SSE {code}")
                        ended = True
                        break
                if not ended:
                    raise StreamFailure("stream ended without a terminal event")
        except requests.Timeout:
            failure = StreamFailure("timeout")
        except requests.RequestException as exc:
            failure = StreamFailure(f"connection error: {type(exc).__name__}")
        except StreamFailure as exc:
            failure = exc
        self._report("SSE", f"{name} (stream)", started, failure)

    def _report(self, kind: str, name: str, started: float, failure: Exception | None) -> None:
        """One entry in locust's statistics, timed from ``started`` to now."""
        self.environment.events.request.fire(
            request_type=kind,
            name=name,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=0,
            exception=failure,
            context={},
        )


def _judge(reply: Any) -> bool:
    """Marks a JSON reply failed (with its status) unless it is a 2xx; True when it passed."""
    if 200 <= reply.status_code < 300:
        reply.success()
        return True
    status = f"HTTP {reply.status_code}" if reply.status_code else "connection error"
    reply.failure(status)
    return False

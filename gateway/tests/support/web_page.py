"""What the web page tests (``test_web_page*.py``) give the page: its files as they ship, and the
gateway's answers to its API calls (``Api``, a Playwright route handler), so SSE parsing across
chunk boundaries, error rendering and citation labels are checked exactly. The ``api`` and
``page`` fixtures (``conftest``) open the page in a real Chromium."""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Page, Request, Route

WEB = Path(__file__).resolve().parents[2] / "src" / "memex" / "gateway" / "web"
CHROMIUM = Path("/usr/bin/chromium")
BASE = "http://memex.test"
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

CITATIONS = [
    {
        "ref": "[[Flat Deposit Agreement]]",
        "item_id": "c1",
        "episode_id": "ep-deposit",
        "quote": "£1,030 of the £1,150",
        "support": "verbatim",
        "support_label": "verbatim",
    },
    {
        "ref": "[[2026-04-28 — Deposit sorted]]",
        "item_id": "c2",
        "episode_id": "ep-sorted",
        "quote": "he agreed to drop the worktop charge",
        "support": "paraphrase",
        "support_label": "paraphrase",
    },
    {
        "ref": "events:ev-deposit-agreed",
        "item_id": "ev-deposit-agreed",
        "episode_id": "",
        "quote": "Graham was being fair",
        "support": "inference",
        "support_label": "reading between the lines",
    },
]

NOTE = {
    "episode_id": "ep-deposit",
    "title": "Flat Deposit Agreement",
    "path": "home/Flat Deposit Agreement.md",
    "date": "2026-04-28",
    "text": "# Deal 🏠\nGraham returns £1,030 of the £1,150.\n# Later\nIt came late.",
    # Offsets count code points, as Python does; the emoji is two UTF-16 units in JavaScript.
    "sections": [
        {"id": "c0", "ordinal": 0, "heading": "Deal", "start": 0, "end": 9},
        {"id": "c1", "ordinal": 1, "heading": "Deal", "start": 9, "end": 46},
    ],
    # Edited once (docs/as-of.md): the version before the edit reads as "ep-deposit@v1".
    "versions": [
        {
            "episode_id": "ep-deposit@v1",
            "number": 1,
            "valid_from": "2026-01-10T12:00:00Z",
            "valid_to": "2026-03-01T12:00:00Z",
        },
        {
            "episode_id": "ep-deposit",
            "number": 2,
            "valid_from": "2026-03-01T12:00:00Z",
            "valid_to": "",
        },
    ],
}
EARLIER = {
    **NOTE,
    "episode_id": "ep-deposit@v1",
    "text": "# Deal\nGraham returns £900.",
    "sections": [],
}


EVIDENCE = {"format": "memex-evidence/1", "turn_id": "turn-9", "question": "How much?"}


def persona(name: str, description: str, **flags: bool) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "default_for_ask": flags.get("ask", False),
        "default_for_chat": flags.get("chat", False),
        "chunks": 10,
        "channels": ["vector"],
        "time_window_days": 0,
        "include_contested": False,
        "observation_weight": 1.0,
        "stages": ["retrieve", "synthesize"],
        "model_calls": 1,
        "system_prompt": "...",
    }


# A user's own persona (historian) is listed beside the built-ins, and is the chat default here.
PERSONAS = {
    "personas": [
        persona("analyst", "Cited, careful answers.", ask=True),
        persona("friend", "Warm and brief."),
        persona("historian", "Dates first.", chat=True),
    ],
    "default_ask": "analyst",
    "default_chat": "historian",
}


def sse(*events: tuple[str, dict[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


class Api:
    """The answers the page gets, and the requests it made."""

    def __init__(self) -> None:
        self.chat_body = ""
        self.chat_status = 200
        self.requests: list[tuple[str, str, dict[str, str], str | None]] = []
        self.turn_states = ["pending", "thinking", "answered"]
        self.personas_status = 200
        self.note_requests: list[Request] = []
        self.refuse_sensitive = False  # answer include_sensitive as a key without the grant
        self.evidence_urls: list[str] = []

    def handle(self, route: Route) -> None:
        request = route.request
        path = urlsplit(request.url).path
        self.requests.append((request.method, path, request.headers, request.post_data))
        asked = json.loads(request.post_data or "{}").get("include_sensitive", False)
        if self.refuse_sensitive and asked and path in ("/v1/chat", "/v1/turns"):
            message = "this API key may not read sensitive items; make a key that may with ..."
            error = {"error": {"code": "PERMISSION_DENIED", "message": message}}
            route.fulfill(status=403, json=error)
            return
        if path == "/" or path.startswith(("/static/", "/notes/")):
            # The gateway serves the page itself at / and at /notes/{id}.
            name = path.removeprefix("/static/") if path.startswith("/static/") else "index.html"
            file = WEB / name
            kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
            route.fulfill(status=200, body=file.read_bytes(), content_type=kind)
        elif path == "/v1/chat":
            if self.chat_status != 200:
                error = {"error": {"code": "UNAVAILABLE", "message": "the orchestrator is down"}}
                route.fulfill(status=self.chat_status, json=error)
            else:
                route.fulfill(status=200, body=self.chat_body, content_type="text/event-stream")
        elif path == "/v1/personas":
            if self.personas_status != 200:
                error = {"error": {"code": "UNAUTHENTICATED", "message": "an API key is required"}}
                route.fulfill(status=self.personas_status, json=error)
            else:
                route.fulfill(json=PERSONAS)
        elif path == "/v1/notes/ep-deposit":
            self.note_requests.append(request)
            route.fulfill(json=NOTE)
        elif path == "/v1/notes/ep-deposit%40v1":
            route.fulfill(json=EARLIER)
        elif path.startswith("/v1/evidence/"):
            self.evidence_urls.append(request.url)
            if path == "/v1/evidence/m1":
                disposition = 'attachment; filename="memex-evidence-turn-9.json"'
                route.fulfill(json=EVIDENCE, headers={"Content-Disposition": disposition})
            else:
                message = "no evidence bundle for answer 'm2' (answers given before ...)"
                route.fulfill(status=404, json={"error": {"code": "NOT_FOUND", "message": message}})
        elif path.startswith("/v1/conversations"):
            route.fulfill(json={"conversations": []})
        elif path == "/v1/threads":
            route.fulfill(json={"threads": [{"id": "th1", "title": "Queued", "created_at": ""}]})
        elif path == "/v1/turns":
            route.fulfill(status=202, json={"turn": self.turn("pending")})
        elif path == "/v1/turns/t1":
            state = self.turn_states.pop(0)
            if state == "limited":
                error = {"error": {"code": "RESOURCE_EXHAUSTED", "message": "rate limit"}}
                route.fulfill(status=429, json=error, headers={"Retry-After": "1"})
            else:
                route.fulfill(json={"turn": self.turn(state)})
        elif path == "/v1/threads/th1/turns":
            reply = {
                **self.turn("answered"),
                **{"id": "t2", "role": "assistant", "text": "Plot 23B.", "reply_to": "t1"},
            }
            route.fulfill(json={"turns": [self.turn("answered"), reply]})
        else:
            route.fulfill(status=404, json={"error": {"code": "NOT_FOUND", "message": path}})

    @staticmethod
    def turn(state: str) -> dict[str, Any]:
        return {
            "id": "t1",
            "thread_id": "th1",
            "role": "user",
            "text": "What's my plot?",
            "citations": [CITATIONS[0]] if state == "answered" else [],
            "state": state,
            "error": "reasoner unavailable" if state == "error" else "",
            "created_at": "2026-11-30T05:00:00Z",
        }


def ask(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()

"""The web chat page's own logic in a real Chromium, with the gateway's answers given by the test.

The page's files are served as they ship; only the API calls are answered here (Playwright
routes), so SSE parsing across chunk boundaries, error rendering and citation labels are checked
exactly. The streaming path against the real stack is tests/e2e/test_web_chat.py.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, Route, expect, sync_playwright

from memex.shared.testing import require

WEB = Path(__file__).resolve().parents[1] / "src" / "memex" / "gateway" / "web"
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

pytestmark = pytest.mark.slow

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
        self.ask_body = ""
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
        elif path == "/v1/ask":
            route.fulfill(status=200, body=self.ask_body, content_type="text/event-stream")
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
            reply = {**self.turn("answered"), "id": "t2", "role": "assistant", "text": "Plot 23B."}
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


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def page(api: Api, tmp_path: Path) -> Iterator[Page]:
    require(CHROMIUM, "run `make browser`")
    with sync_playwright() as p:
        # A persistent context is how Playwright takes a fresh --user-data-dir of our own.
        browser = p.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page()
            page.route(f"{BASE}/**", api.handle)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{BASE}/")
            yield page
            assert not errors, errors
        finally:
            browser.close()


def ask(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_a_streamed_answer_renders_text_citations_and_the_withheld_note(
    page: Page, api: Api
) -> None:
    body = sse(
        ("meta", {"conversation_id": "c1", "model": "smol", "persona": "friend"}),
        ("delta", {"text": "Graham gave back "}),
        ("delta", {"text": "£1,030."}),
        # The orchestrator's own withheld note ends the text; the page shows it once, below.
        ("delta", {"text": "\n\n_(2 sensitive sources withheld from the cloud answer.)_"}),
        ("citations", {"citations": CITATIONS, "withheld": 2}),
        ("done", {"message_id": "m1", "latency_ms": 1234.0, "chunks_considered": 8}),
    )
    # CRLF line ends and a keep-alive comment: both are valid SSE the page must read.
    api.chat_body = ": ping\r\n\r\n" + body.replace("\n", "\r\n")
    ask(page, "How much of my deposit came back?")
    answer = page.locator(".message.assistant")
    expect(answer).to_have_attribute("data-state", "done")
    expect(answer).to_have_attribute("data-deltas", "3")
    expect(answer.locator(".text")).to_have_text("Graham gave back £1,030.")
    labels = answer.locator(".citation .support").all_inner_texts()
    assert labels == ["verbatim", "paraphrase", "reading between the lines"]
    link = answer.get_by_role("link", name="[[Flat Deposit Agreement]]")
    expect(link).to_have_attribute("href", "/notes/ep-deposit?chunk=c1")
    # A record citation without a note shows its ref and quote, not a dead link.
    expect(answer.locator(".citation").nth(2).locator("a")).to_have_count(0)
    expect(answer.locator(".citation").nth(2)).to_contain_text("events:ev-deposit-agreed")
    expect(answer.locator(".withheld")).to_have_text(
        "2 sensitive sources were withheld from this answer."
    )
    expect(answer.locator(".meta")).to_have_text("friend · smol · 1.2 s · 8 chunks considered")
    # The next message continues the same conversation.
    api.chat_body = body
    ask(page, "And why?")
    expect(page.locator(".message.assistant").nth(1)).to_have_attribute("data-state", "done")
    sent = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/chat"]
    assert "conversation_id" not in sent[0] and sent[1]["conversation_id"] == "c1"


def test_each_answer_has_a_download_evidence_link_that_sends_the_key(
    page: Page, api: Api, tmp_path: Path
) -> None:
    """Issue 37: the link under an answer downloads its evidence bundle by the answer's id, with
    the API key (a plain link could not send it), under the gateway's file name."""
    page.get_by_text("API key").click()
    page.get_by_label("Key, sent as a Bearer token").fill("mx-secret")
    page.get_by_role("button", name="Save").click()
    api.chat_body = sse(
        ("meta", {"conversation_id": "c1", "model": "smol", "persona": "friend"}),
        ("delta", {"text": "£1,030."}),
        ("done", {"message_id": "m1", "latency_ms": 5, "chunks_considered": 2}),
    )
    ask(page, "How much came back?")
    answer = page.locator(".message.assistant")
    link = answer.get_by_role("link", name="Download evidence")
    expect(link).to_have_attribute("href", "/v1/evidence/m1")
    with page.expect_download() as saved:
        link.click()
    download = saved.value
    assert download.suggested_filename == "memex-evidence-turn-9.json"
    download.save_as(tmp_path / "bundle.json")
    assert json.loads((tmp_path / "bundle.json").read_text()) == EVIDENCE
    [headers] = [h for m, p, h, _ in api.requests if p == "/v1/evidence/m1"]
    assert headers["authorization"] == "Bearer mx-secret"
    # Shared files leave sensitive excerpts out: the page does not ask for them.
    assert api.evidence_urls == [f"{BASE}/v1/evidence/m1"]

    # An answer without a bundle says so beside its link, and the answer stays as it was.
    api.chat_body = api.chat_body.replace('"m1"', '"m2"')
    ask(page, "Again?")
    second = page.locator(".message.assistant").nth(1)
    second.get_by_role("link", name="Download evidence").click()
    expect(second.locator(".evidence-error")).to_contain_text("no evidence bundle for answer")
    expect(second).to_have_attribute("data-state", "done")
    expect(page.get_by_role("alert")).to_have_count(0)


def test_an_error_event_and_an_http_error_are_shown(page: Page, api: Api) -> None:
    api.chat_body = sse(
        ("meta", {"conversation_id": "c1", "model": "smol", "persona": "friend"}),
        ("delta", {"text": "Partial"}),
        ("error", {"code": "UNAVAILABLE", "message": "the reasoner went away"}),
    )
    ask(page, "Will this fail?")
    first = page.locator(".message.assistant").first
    expect(first.get_by_role("alert")).to_have_text("UNAVAILABLE the reasoner went away")
    expect(first).to_have_attribute("data-state", "error")

    api.chat_status = 503
    ask(page, "And now?")
    second = page.locator(".message.assistant").nth(1)
    expect(second.get_by_role("alert")).to_have_text("UNAVAILABLE the orchestrator is down")


def test_a_stream_cut_short_says_so(page: Page, api: Api) -> None:
    api.chat_body = sse(("meta", {"conversation_id": "c1", "model": "m", "persona": "p"}))
    ask(page, "Hello?")
    alert = page.locator(".message.assistant").get_by_role("alert")
    expect(alert).to_contain_text("INTERRUPTED")


def test_the_api_key_is_sent_as_a_bearer_token(page: Page, api: Api) -> None:
    page.get_by_text("API key").click()
    page.get_by_label("Key, sent as a Bearer token").fill("mx-secret")
    page.get_by_role("button", name="Save").click()
    api.chat_body = sse(("done", {"message_id": "m", "latency_ms": 1, "chunks_considered": 0}))
    ask(page, "Hi")
    expect(page.locator(".message.assistant")).to_have_attribute("data-state", "done")
    chat = [h for m, p, h, _ in api.requests if p == "/v1/chat"]
    assert chat[0]["authorization"] == "Bearer mx-secret"


def test_the_owners_page_asks_for_sensitive_notes_and_copes_with_a_key_that_may_not(
    page: Page, api: Api
) -> None:
    """Issue 11: answers use sensitive notes only when asked; the page is the owner's own, so it
    asks. With a key lacking the grant (a 403), it asks again without, once, and remembers."""
    done = ("done", {"message_id": "m", "latency_ms": 1, "chunks_considered": 0})
    api.chat_body = sse(done)
    ask(page, "Hi")
    expect(page.locator(".message.assistant")).to_have_attribute("data-state", "done")
    api.refuse_sensitive = True
    ask(page, "Again")
    expect(page.locator(".message.assistant").nth(1)).to_have_attribute("data-state", "done")
    ask(page, "Once more")
    expect(page.locator(".message.assistant").nth(2)).to_have_attribute("data-state", "done")
    expect(page.get_by_role("alert")).to_have_count(0)
    sent = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/chat"]
    # asked and allowed; asked, refused, asked again without; not asked again for this key
    assert [b.get("include_sensitive", False) for b in sent] == [True, True, False, False]

    page.get_by_role("radio", name="Queue").check()
    ask(page, "Queued?")
    expect(page.locator(".message.user").last).to_have_attribute("data-state", "answered")
    [turn] = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/turns"]
    assert "include_sensitive" not in turn  # this key was refused already


def test_a_queued_turn_goes_pending_thinking_answered(page: Page, api: Api) -> None:
    api.turn_states = ["pending", "limited", "thinking", "answered"]  # a 429 is waited out
    page.get_by_role("radio", name="Queue").check()
    expect(page.get_by_label("Persona")).to_be_disabled()
    ask(page, "What's my plot?")
    question = page.locator(".message.user")
    expect(question).to_have_attribute("data-state", "answered", timeout=10_000)
    reply = page.locator(".message.assistant")
    expect(reply.locator(".text")).to_have_text("Plot 23B.")
    expect(reply.locator(".support")).to_have_text("verbatim")
    evidence = reply.get_by_role("link", name="Download evidence")
    expect(evidence).to_have_attribute("href", "/v1/evidence/t2")  # the answer's own turn id
    polled = [p for m, p, _, _ in api.requests if p == "/v1/turns/t1"]
    assert len(polled) == 4
    [queued] = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/turns"]
    assert queued["include_sensitive"] is True  # the owner's page asks (issue 11)
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(page.locator("#threads li")).to_have_count(1)


def test_a_citation_link_opens_the_note_with_the_cited_chunk_marked(page: Page, api: Api) -> None:
    api.chat_body = sse(
        ("delta", {"text": "£1,030."}),
        ("citations", {"citations": CITATIONS[:1], "withheld": 0}),
        ("done", {"message_id": "m1", "latency_ms": 1.0, "chunks_considered": 1}),
    )
    ask(page, "How much came back?")
    page.get_by_role("link", name="[[Flat Deposit Agreement]]").click()
    expect(page).to_have_url(f"{BASE}/notes/ep-deposit?chunk=c1")
    expect(page.get_by_role("heading", name="Flat Deposit Agreement")).to_be_visible()
    expect(page.locator("mark#cited")).to_have_text("Graham returns £1,030 of the £1,150.\n")
    # The owner's page asks for the note explicitly, so a sensitive one opens too (issue 11).
    [query] = [urlsplit(r.url).query for r in api.note_requests]
    assert query == "include_sensitive=true"
    expect(page.get_by_label("Message")).to_be_hidden()
    page.get_by_role("link", name="Back to chat").click()
    expect(page.get_by_label("Message")).to_be_visible()


def test_a_message_as_of_a_day_is_asked_for_that_day(page: Page, api: Api) -> None:
    """docs/as-of.md: chat has no as_of, so with "As of" set the page asks (POST /v1/ask,
    streamed) and marks the answer with the day; queued turns cannot, so it is off for them."""
    as_of = page.get_by_label("As of")
    expect(as_of).to_have_attribute("type", "date")
    expect(as_of).to_have_value("")
    result = {
        "answer": "The service costs £90.",
        "citations": [{**CITATIONS[0], "episode_id": "ep-deposit@v1", "item_id": "ep-deposit@v1-0"}],
        "withheld": 0, "persona": "analyst", "model": "smol", "latency_ms": 1500.0,
        "turn_id": "turn-7", "as_of": "2026-02-01",
    }  # fmt: skip
    api.ask_body = sse(
        ("started", {"model": "smol", "persona": "analyst", "sources": [], "source_paths": []}),
        ("delta", {"text": "It is £120."}),
        ("redraft", {"reason": "reading all 2 sources"}),
        ("delta", {"text": "The service costs £90."}),
        ("result", result),
    )
    as_of.fill("2026-02-01")
    ask(page, "How much is the boiler service?")
    answer = page.locator(".message.assistant")
    expect(answer).to_have_attribute("data-state", "done")
    expect(answer.locator(".text")).to_have_text("The service costs £90.")
    expect(answer.locator(".as-of-badge")).to_have_text("as of 2026-02-01")
    link = answer.get_by_role("link", name="[[Flat Deposit Agreement]]")
    expect(link).to_have_attribute("href", "/notes/ep-deposit%40v1?chunk=ep-deposit%40v1-0")
    evidence = answer.get_by_role("link", name="Download evidence")
    expect(evidence).to_have_attribute("href", "/v1/evidence/turn-7")
    [sent] = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/ask"]
    assert sent["as_of"] == "2026-02-01" and sent["stream"] is True
    assert sent["question"] == "How much is the boiler service?"
    assert not [p for _, p, _, _ in api.requests if p == "/v1/chat"]
    page.get_by_role("radio", name="Queue").check()
    expect(as_of).to_be_disabled()


def test_the_note_view_lists_the_versions_and_opens_an_earlier_one(page: Page) -> None:
    page.goto(f"{BASE}/notes/ep-deposit")
    versions = page.get_by_role("region", name="Versions")
    expect(versions.get_by_role("listitem")).to_have_count(2)
    expect(versions.get_by_role("listitem").first).to_have_text("v1 2026-01-10 to 2026-03-01")
    expect(versions.get_by_role("listitem").last).to_have_text("v2 since 2026-03-01 (current)")
    expect(versions.locator("[aria-current]")).to_have_text("v2")
    earlier = versions.get_by_role("link", name="v1")
    expect(earlier).to_have_attribute("href", "/notes/ep-deposit%40v1")
    earlier.click()
    expect(page).to_have_url(f"{BASE}/notes/ep-deposit%40v1")
    expect(page.locator(".note-text")).to_have_text("# Deal\nGraham returns £900.")
    expect(versions.get_by_role("link", name="v2")).to_have_attribute("href", "/notes/ep-deposit")


def test_an_unknown_note_says_so(page: Page) -> None:
    page.goto(f"{BASE}/notes/ep-gone")
    expect(page.get_by_role("alert")).to_contain_text("NOT_FOUND")


def test_at_a_narrow_width_the_history_folds_behind_a_button(page: Page, api: Api) -> None:
    page.set_viewport_size({"width": 380, "height": 740})
    sidebar = page.get_by_role("navigation", name="Conversations and threads")
    expect(sidebar).to_be_hidden()
    toggle = page.get_by_role("button", name="History")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(sidebar).to_be_visible()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    # The page never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 380
    toggle.click()
    sidebar.get_by_role("button", name="Queued").click()  # opening a thread folds it again
    expect(sidebar).to_be_hidden()
    expect(page.locator("#chat-title")).to_have_text("Queued")


def test_a_queued_turn_that_fails_shows_the_workers_message(page: Page, api: Api) -> None:
    api.turn_states = ["thinking", "error"]
    page.get_by_role("radio", name="Queue").check()
    ask(page, "What's my plot?")
    question = page.locator(".message.user")
    expect(question).to_have_attribute("data-state", "error", timeout=10_000)
    expect(question.locator(".turn-state")).to_have_text("error")
    expect(question.get_by_role("alert")).to_have_text("TURN_FAILED reasoner unavailable")
    expect(page.locator(".message.assistant")).to_have_count(0)


def test_the_persona_picker_lists_the_gateways_personas_and_sends_the_choice(
    page: Page, api: Api
) -> None:
    picker = page.get_by_label("Persona")
    expect(picker).to_have_attribute("data-loaded", "4")
    options = picker.locator("option")
    expect(options).to_have_text(["default (historian)", "analyst", "friend", "historian"])
    expect(options.nth(1)).to_have_attribute("title", "Cited, careful answers.")
    api.chat_body = sse(("done", {"message_id": "m", "latency_ms": 1, "chunks_considered": 0}))
    ask(page, "Default first")
    expect(page.locator(".message.assistant").first).to_have_attribute("data-state", "done")
    picker.select_option("historian")
    ask(page, "When did I move?")
    expect(page.locator(".message.assistant").nth(1)).to_have_attribute("data-state", "done")
    sent = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/chat"]
    assert "persona" not in sent[0] and sent[1]["persona"] == "historian"
    # The choice is kept for the next visit.
    page.reload()
    expect(page.get_by_label("Persona")).to_have_value("historian")


def test_a_persona_list_refused_leaves_the_default_and_says_why(page: Page, api: Api) -> None:
    api.personas_status = 401
    page.reload()
    picker = page.get_by_label("Persona")
    expect(picker).to_have_attribute("data-loaded", "1")
    expect(picker).to_have_value("")
    expect(picker).to_have_attribute("title", re.compile("UNAUTHENTICATED"))
    # Saving a key reads the list again.
    api.personas_status = 200
    page.get_by_text("API key").click()
    page.get_by_label("Key, sent as a Bearer token").fill("mx-secret")
    page.get_by_role("button", name="Save").click()
    expect(picker).to_have_attribute("data-loaded", "4")
    listed = [h for m, p, h, _ in api.requests if p == "/v1/personas"]
    assert listed[-1]["authorization"] == "Bearer mx-secret"

"""The web chat page's own logic in a real Chromium, with the gateway's answers given by the test.

The page's files are served as they ship; only the API calls are answered here (Playwright
routes, ``support/web_page.py``), so SSE parsing across chunk boundaries, error rendering and
citation labels are checked exactly. The streaming path against the real stack is
tests/e2e/test_web_chat.py. This module: a chat's answers, their errors, the key, sensitive notes,
evidence downloads and asking as of a day; queued turns, notes and personas have modules of their
own (``test_web_page_*.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .support.web_page import BASE, CITATIONS, EVIDENCE, Api, ask, sse

pytestmark = pytest.mark.slow


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


def test_a_message_as_of_a_day_is_answered_for_that_day(page: Page, api: Api) -> None:
    """docs/as-of.md: with "As of" set, the chat message carries the day and the reply is marked
    with it; the next message without it reads memory as it is now, in the same conversation.
    A queued question carries it too."""
    as_of = page.get_by_label("As of")
    expect(as_of).to_have_attribute("type", "date")
    expect(as_of).to_have_value("")
    citation = {**CITATIONS[0], "episode_id": "ep-deposit@v1", "item_id": "ep-deposit@v1-0"}
    api.chat_body = sse(
        ("meta", {"conversation_id": "c1", "model": "smol", "persona": "friend",
                  "as_of": "2026-02-01"}),
        ("delta", {"text": "The service costs £90."}),
        ("citations", {"citations": [citation], "withheld": 0}),
        ("done", {"message_id": "m7", "latency_ms": 1500.0, "chunks_considered": 2}),
    )  # fmt: skip
    as_of.fill("2026-02-01")
    ask(page, "How much is the boiler service?")
    answer = page.locator(".message.assistant")
    expect(answer).to_have_attribute("data-state", "done")
    expect(answer.locator(".text")).to_have_text("The service costs £90.")
    expect(answer.locator(".as-of-badge")).to_have_text("as of 2026-02-01")
    link = answer.get_by_role("link", name="[[Flat Deposit Agreement]]")
    expect(link).to_have_attribute("href", "/notes/ep-deposit%40v1?chunk=ep-deposit%40v1-0")
    evidence = answer.get_by_role("link", name="Download evidence")
    expect(evidence).to_have_attribute("href", "/v1/evidence/m7")
    [sent] = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/chat"]
    assert sent["as_of"] == "2026-02-01"
    assert sent["message"] == "How much is the boiler service?"

    api.chat_body = api.chat_body.replace(', "as_of": "2026-02-01"', "")
    as_of.fill("")
    ask(page, "And now?")
    second = page.locator(".message.assistant").nth(1)
    expect(second).to_have_attribute("data-state", "done")
    expect(second.locator(".as-of-badge")).to_have_count(0)
    later = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/chat"][1]
    assert "as_of" not in later and later["conversation_id"] == "c1"

    page.get_by_role("radio", name="Queue").check()  # a queued question may be asked as of it too
    expect(as_of).to_be_enabled()
    as_of.fill("2026-02-01")
    ask(page, "What was my plot then?")
    question = page.locator(".message.user").last
    expect(question).to_have_attribute("data-state", "answered")
    expect(question.locator(".as-of-badge")).to_have_text("as of 2026-02-01")
    [queued] = [json.loads(d or "{}") for m, p, _, d in api.requests if p == "/v1/turns"]
    assert queued["as_of"] == "2026-02-01" and queued["text"] == "What was my plot then?"

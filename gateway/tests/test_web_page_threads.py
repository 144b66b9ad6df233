"""The web chat page's queued turns and its history of conversations and threads, in a real
Chromium with the gateway's answers given by the test (``support/web_page.py``)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from .support.web_page import Api, ask

pytestmark = pytest.mark.slow


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

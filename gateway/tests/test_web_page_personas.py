"""The web chat page's persona picker: the gateway's personas listed, the choice sent and kept, a
refused list explained; in a real Chromium with the gateway's answers given by the test
(``support/web_page.py``)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from .support.web_page import Api, ask, sse

pytestmark = pytest.mark.slow


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

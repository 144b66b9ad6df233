"""The web chat page's note view: a citation opens its note with the cited chunk marked, and a
note lists its versions; in a real Chromium with the gateway's answers given by the test
(``support/web_page.py``)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from .support.web_page import BASE, CITATIONS, Api, ask, sse

pytestmark = pytest.mark.slow


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

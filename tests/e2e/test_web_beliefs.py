"""The web chat's beliefs view (issue 37, docs/reflect.md) in a real Chromium against the shared
demo stack: a derived belief listed with its status, confidence and graded quote (its note a
link that opens the note), then confirmed, rejected and forgotten from the page, each as the API
then reports it.

`memex reflect` with a model takes minutes and concludes what it likes, so the belief is written
the way reflect writes one: built and graded by the orchestrator's beliefs module, from a quote of
a real demo note, and upserted through the orchestrator's own memory client (GrpcMemory, over the
stack's mTLS) as a record of the beliefs collection. Everything the page then does goes through
the gateway and the orchestrator as it would after a reflect run. The belief is forgotten at the
end, so the shared stack's memory is as it was."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from memex.orchestrator.learning import beliefs as b
from memex.orchestrator.wire.clients import GrpcMemory
from memex.shared import internal_auth

from .conftest import DemoStack
from .test_web_chat import Patient, accept_next_dialog, open_as_owner

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

NOTE_TITLE = "2025-02-11 — Got the allotment"
QUOTE = "a half plot has come free. Went straight after work in the last of the light."
STATEMENT = "When an allotment plot comes free, I go and see it the same day."


async def upsert(stack: DemoStack, belief: b.Belief) -> None:
    # The client reads the internal credential once per process (``internal_auth.from_env``);
    # an earlier test in this process may have read another, so it is read again here, and
    # forgotten after, for the tests that follow.
    internal_auth.from_env.cache_clear()
    memory = GrpcMemory(f"127.0.0.1:{stack.env['MEMEX_RETRIEVAL_PORT']}")
    try:
        await memory.upsert_records("", [belief.record()])  # the gateway's keyless tenant
    finally:
        await memory.close()
        internal_auth.from_env.cache_clear()


@pytest.fixture
def belief(demo_stack: DemoStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[b.Belief]:
    """A derived belief resting on one verbatim quote of a demo note, forgotten afterwards."""
    http = Patient(base_url=demo_stack.gateway_url, timeout=60)
    hits = http.post("/v1/search", json={"query": "Got the allotment half plot", "limit": 10})
    assert hits.status_code == 200, hits.text
    found = [
        h["provenance"] for h in hits.json()["items"] if h["provenance"]["title"] == NOTE_TITLE
    ]
    assert found, "the demo vault's allotment note is found"
    episode = found[0]["episode_id"]
    note = http.get(f"/v1/notes/{episode}").json()
    support = b.graded(QUOTE, note["text"])  # reflect's own grading, against the note as kept
    assert support == "verbatim"
    evidence = b.Evidence(episode, note["title"], note["date"], QUOTE, support)
    made = b.Belief(
        id=b.belief_id(STATEMENT),
        statement=STATEMENT,
        status="active",
        confidence=0.7,
        evidence=(evidence,),
        date=dt.date.today().isoformat(),  # the newest: listed first
        model="test",
    )
    # The orchestrator's client reads the deployment's internal credential from the environment.
    monkeypatch.setenv("MEMEX_INTERNAL_AUTH", "mtls")
    monkeypatch.setenv("MEMEX_INTERNAL_TLS_DIR", demo_stack.env["MEMEX_INTERNAL_TLS_DIR"])
    asyncio.run(upsert(demo_stack, made))
    try:
        yield made
    finally:
        http.delete(f"/v1/beliefs/{made.id}")  # 404 once the test forgot it


def listed(http: httpx.Client, belief_id: str, **params: str) -> dict[str, Any] | None:
    """The belief as GET /v1/beliefs lists it, or None when it is not listed."""
    beliefs = http.get("/v1/beliefs", params=params).json()["beliefs"]
    return next((x for x in beliefs if x["id"] == belief_id), None)


def test_beliefs_are_listed_and_confirmed_rejected_forgotten_from_the_page(
    demo_stack: DemoStack, belief: b.Belief, page: Page
) -> None:
    http = Patient(base_url=demo_stack.gateway_url, timeout=60)
    open_as_owner(page, demo_stack, "web-beliefs")
    page.get_by_role("button", name="Beliefs").click()
    view = page.get_by_role("region", name="Beliefs")
    expect(view.get_by_role("heading", name="Beliefs")).to_be_visible()
    expect(page.locator("#composer")).to_be_hidden()
    item = view.locator(f'.belief[data-id="{belief.id}"]')
    expect(item.locator(".statement")).to_have_text(STATEMENT)
    expect(item.locator(".belief-status")).to_have_text(["active"])
    expect(item.locator(".facts").first).to_contain_text("confidence 70%")
    expect(item.locator(".facts").first).to_contain_text("derived by test")
    quote = item.locator(".citation")
    expect(quote.locator(".support")).to_have_text("verbatim")
    expect(quote.locator(".quote")).to_have_text(QUOTE)
    note_link = quote.get_by_role("link", name=NOTE_TITLE)
    episode = belief.evidence[0].episode_id
    expect(note_link).to_have_attribute("href", f"/notes/{episode}")
    # The vault's own beliefs are listed too, without buttons: the vault file is theirs.
    vault = view.locator(".belief", has_text="from your vault")
    expect(vault.first).to_contain_text("records/beliefs.jsonl")
    expect(vault.first.get_by_role("button")).to_have_count(0)

    item.get_by_role("button", name="Confirm").click()
    expect(item.locator(".belief-status")).to_have_text(["active", "confirmed"])
    expect(item.get_by_role("button", name="Confirm")).to_be_disabled()
    expect(view.locator(".beliefs-status")).to_contain_text("Confirmed")
    shown = listed(http, belief.id)
    assert shown and shown["confirmed"] and shown["status"] == "active"

    item.get_by_role("button", name="Reject").click()
    expect(item).to_have_attribute("data-status", "rejected")
    expect(item.locator(".belief-status")).to_have_text(["rejected"])
    expect(item.get_by_role("button", name="Reject")).to_be_disabled()
    assert listed(http, belief.id) is None  # rejected: listed only when asked for
    shown = listed(http, belief.id, include_rejected="true")
    assert shown and shown["status"] == "rejected" and not shown["confirmed"]

    # Its quote's note opens as a citation's does.
    note_link.click()
    expect(page).to_have_url(re.compile(rf"/notes/{re.escape(episode)}$"))
    expect(page.get_by_role("heading", name=NOTE_TITLE)).to_be_visible()
    page.get_by_role("link", name="Back to chat").click()
    page.get_by_role("button", name="Beliefs").click()
    expect(item).to_have_attribute("data-status", "rejected")  # as kept

    asked = accept_next_dialog(page)
    item.get_by_role("button", name="Forget").click()
    expect(item).to_have_count(0)
    assert asked and "Forget this belief" in asked[0]
    expect(view.locator(".beliefs-status")).to_contain_text("Forgot")
    expect(page.get_by_role("alert")).to_have_count(0)
    assert listed(http, belief.id, include_rejected="true") is None

    # Back to the chat: the view closes and the composer is there again.
    view.get_by_role("button", name="Back to chat").click()
    expect(view).to_have_count(0)
    expect(page.locator("#composer")).to_be_visible()

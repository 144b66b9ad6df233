"""Answers follow the read rule (issue 11): ask, chat, queued turns and chat completions use
sensitive notes only when the body sets include_sensitive AND the caller may (a key granted it, or
loopback without a key); a key without the grant asking is a 403. What the orchestrator then does
with the flag is tested in services/orchestrator/tests and tests/e2e/test_read_policy.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from memex.gateway import apikeys

from .support.harness import Gateway, running_gateway

COMPLETION = {"model": "memex", "messages": [{"role": "user", "content": "hi"}]}


def answers(c: httpx.Client, headers: dict[str, str], **extra: Any) -> list[httpx.Response]:
    """One request to each answering route, with ``extra`` in the body (completions: in the
    ``memex`` extension)."""
    return [
        c.post("/v1/ask", json={"question": "q?", **extra}, headers=headers),
        c.post("/v1/ask", json={"question": "q?", "stream": True, **extra}, headers=headers),
        c.post("/v1/chat", json={"message": "hi", **extra}, headers=headers),
        c.post("/v1/turns", json={"text": "q?", **extra}, headers=headers),
        c.post("/v1/chat/completions", json={**COMPLETION, "memex": extra}, headers=headers),
    ]


def flags(g: Gateway) -> list[bool]:
    """The include_sensitive of the last ask, streamed ask, chat and turn the orchestrator got,
    and of the completion's chat."""
    o = g.orchestrator
    return [
        o.ask_requests[-2].include_sensitive,
        o.ask_requests[-1].include_sensitive,
        o.chat_requests[-2].include_sensitive,
        o.turn_requests[-1].include_sensitive,
        o.chat_requests[-1].include_sensitive,
    ]


def key_headers(keys: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Headers of two new keys in ``keys``: one without the sensitive grant, one with it."""
    plain = apikeys.create_key(keys, "plain")
    granted = apikeys.create_key(keys, "granted", sensitive=True)
    return {"Authorization": f"Bearer {plain}"}, {"Authorization": f"Bearer {granted}"}


def test_answers_withhold_sensitive_notes_unless_asked(gateway: Gateway) -> None:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        assert [r.status_code for r in answers(c, {})] == [200, 200, 200, 202, 200]
        assert flags(gateway) == [False] * 5
        # The keyless loopback caller is the owner at their own machine: they may ask.
        asked = answers(c, {}, include_sensitive=True)
        assert [r.status_code for r in asked] == [200, 200, 200, 202, 200]
        assert flags(gateway) == [True] * 5


def test_a_key_needs_the_grant_for_an_answer_to_use_sensitive_notes(tmp_path: Path) -> None:
    plain, granted = key_headers(tmp_path / "keys.json")
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        before = len(g.orchestrator.ask_requests), len(g.orchestrator.chat_requests)
        refused = answers(c, plain, include_sensitive=True)
        assert [r.status_code for r in refused] == [403] * 5
        for r in refused:
            message = r.json()["error"]["message"]
            assert "memex keys create NAME --sensitive" in message, message
        # Refused before the orchestrator: nothing was asked.
        assert (len(g.orchestrator.ask_requests), len(g.orchestrator.chat_requests)) == before
        assert g.orchestrator.turn_requests == []

        assert [r.status_code for r in answers(c, plain)] == [200, 200, 200, 202, 200]
        assert flags(g) == [False] * 5
        asked = answers(c, granted, include_sensitive=True)
        assert [r.status_code for r in asked] == [200, 200, 200, 202, 200]
        assert flags(g) == [True] * 5


def test_replaying_stored_answers_follows_the_same_rule(tmp_path: Path) -> None:
    """A conversation or thread replayed shows replies that drew on sensitive notes only to a
    request that asked and may (the orchestrator puts placeholders in their place otherwise)."""
    plain, granted = key_headers(tmp_path / "keys.json")
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        chat = c.post("/v1/chat", json={"message": "hi"}, headers=plain)
        meta = next(line for line in chat.text.splitlines() if line.startswith("data:"))
        conversation = json.loads(meta.removeprefix("data:"))["conversation_id"]
        thread = c.post("/v1/turns", json={"text": "q?"}, headers=plain).json()["turn"]
        replays = [f"/v1/conversations/{conversation}", f"/v1/threads/{thread['thread_id']}/turns"]
        for path in replays:
            assert c.get(path, headers=plain).status_code == 200
            refused = c.get(path, params={"include_sensitive": "true"}, headers=plain)
            assert refused.status_code == 403, refused.text
            assert "--sensitive" in refused.json()["error"]["message"]
            assert c.get(path, params={"include_sensitive": "true"}, headers=granted).is_success
        asked = [r.include_sensitive for r in g.orchestrator.replay_requests]
        assert asked == [False, True, False, True]  # the refused ones never reached it

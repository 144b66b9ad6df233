"""Memory as of a date on the real stack (issue 37, docs/as-of.md): a vault indexed, edited and
indexed again into its own tenant of the shared demo stack; `memex search`, `memex ask` and
`memex chat` (the tiny local model), a question queued over HTTP for the worker, and `memex note`
as of a day before the edit read the note as it was, the evidence bundles record the day, and
HTTP refuses a day that is not one."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import DemoStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

TENANT = "asof"
QUESTION = "How much does the annual boiler service cost?"


def _write(path: Path, text: str, day: str) -> None:
    path.write_text(text, encoding="utf-8")
    when = dt.datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    os.utime(path, (when, when))


def _run(stack: DemoStack, *args: str, flags: tuple[str, ...] = ("--json",)) -> Any:
    done = stack.memex(*args, "--tenant", TENANT, *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_search_ask_and_note_as_of_a_day_read_the_memory_as_it_was(
    demo_stack: DemoStack, tmp_path: Path
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    boiler = vault / "Boiler.md"
    _write(
        boiler, "# Boiler\nThe annual boiler service with Hearth & Co costs £90.\n", "2026-01-10"
    )
    _write(vault / "Shed.md", "# Shed\nThe shed key hangs behind the blue door.\n", "2026-01-05")
    _run(demo_stack, "index", str(vault))
    _write(
        boiler, "# Boiler\nThe annual boiler service with Hearth & Co costs £120.\n", "2026-03-01"
    )
    second = _run(demo_stack, "index", str(vault))
    assert second["updated"] == 1, second

    then = _run(demo_stack, "search", "boiler service cost", "--as-of", "2026-02-01")
    texts = [i["text"] for i in then["items"] if i["citation"] == "[[Boiler]]"]
    assert texts and "£90" in texts[0] and "£120" not in texts[0]
    now = _run(demo_stack, "search", "boiler service cost")
    assert "£120" in next(i["text"] for i in now["items"] if i["citation"] == "[[Boiler]]")

    reply = _run(demo_stack, "ask", QUESTION, "--as-of", "2026-02-01")
    assert reply["as_of"] == "2026-02-01"
    assert "£120" not in reply["answer"]
    bundle = _run(demo_stack, "evidence", reply["turn_id"], flags=())  # the bundle is JSON
    assert bundle["as_of"] == "2026-02-01"
    shown = [e["text"] for e in bundle["excerpts"] if e.get("title") == "Boiler"]
    assert shown and all("£90" in t and "£120" not in t for t in shown)

    chatted = _run(demo_stack, "chat", QUESTION, "--as-of", "2026-02-01")
    assert chatted["as_of"] == "2026-02-01" and "£120" not in chatted["reply"], chatted
    bundle = _run(demo_stack, "evidence", chatted["message_id"], flags=())
    assert bundle["as_of"] == "2026-02-01"
    shown = [e["text"] for e in bundle["excerpts"] if e.get("title") == "Boiler"]
    assert shown and all("£90" in t and "£120" not in t for t in shown)

    # Queued over HTTP (a key bound to this tenant): the worker answers as of the turn's day.
    made = demo_stack.memex("keys", "create", "asof-queue", "--tenant", TENANT)
    assert made.returncode == 0, made.stderr
    http = httpx.Client(
        base_url=demo_stack.gateway_url,
        headers={"Authorization": f"Bearer {made.stdout.strip()}"},
        timeout=60,
    )
    queued = http.post("/v1/turns", json={"text": QUESTION, "as_of": "2026-02-01"})
    assert queued.status_code == 202, queued.text
    turn = queued.json()["turn"]
    assert turn["as_of"] == "2026-02-01"
    for _ in range(300):
        turn = http.get(f"/v1/turns/{turn['id']}").json()["turn"]
        if turn["state"] in ("answered", "error"):
            break
        time.sleep(1)
    assert turn["state"] == "answered", turn
    turns = http.get(f"/v1/threads/{turn['thread_id']}/turns").json()["turns"]
    reply = next(t for t in turns if t["role"] == "assistant")
    assert "£120" not in reply["text"], reply
    bundle = http.get(f"/v1/evidence/{reply['id']}").json()
    assert bundle["as_of"] == "2026-02-01"
    shown = [e["text"] for e in bundle["excerpts"] if e.get("title") == "Boiler"]
    assert shown and all("£90" in t and "£120" not in t for t in shown)

    old_hit = next(i for i in then["items"] if i["citation"] == "[[Boiler]]")
    old_id = old_hit["provenance"]["episode_id"]
    assert old_id.endswith("@v1")
    note = _run(demo_stack, "note", old_id)
    assert "£90" in note["text"]
    versions = note["versions"]
    assert [v["number"] for v in versions] == [1, 2]
    assert versions[0]["valid_to"].startswith("2026-03-01") and versions[1]["valid_to"] == ""


def test_http_refuses_an_as_of_that_is_not_a_past_day(demo_stack: DemoStack) -> None:
    for bad in ("2026-02-30", "tomorrow", "2999-01-01"):
        reply = httpx.post(
            f"{demo_stack.gateway_url}/v1/search",
            json={"query": "boiler", "as_of": bad},
            timeout=60,
        )
        assert reply.status_code == 400, (bad, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "INVALID_ARGUMENT" and "as_of" in error["message"], error
        queued = httpx.post(
            f"{demo_stack.gateway_url}/v1/turns", json={"text": "boiler?", "as_of": bad}, timeout=60
        )
        assert queued.status_code == 400, (bad, queued.text)  # refused when queued, not later
        assert "as_of" in queued.json()["error"]["message"]

"""An ask's evidence bundle on the real stack (issue 37): one ask with the tiny local model over
the demo vault, allowed its sensitive notes, then its bundle from `memex evidence` and from
`GET /v1/evidence/{turn_id}`, whole and shared. (A chat reply's and a queued answer's bundles are
checked through the web chat in test_web_chat.py.)"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx
import pytest

from .conftest import DemoStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

QUESTION = "What did Ruth and I talk about in my counselling sessions?"
THERAPY = "health/Therapy Notes.md"


def test_an_asks_evidence_bundle_from_the_cli_and_http(
    demo_stack: DemoStack, tmp_path: Path
) -> None:
    asked = demo_stack.memex("ask", QUESTION, "--include-sensitive", "--json")
    assert asked.returncode == 0, asked.stderr
    reply = json.loads(asked.stdout)
    turn_id = reply["turn_id"]

    whole_file = tmp_path / "whole.json"
    saved = demo_stack.memex("evidence", turn_id, "--include-sensitive", "-o", str(whole_file))
    assert saved.returncode == 0, saved.stderr
    whole = json.loads(whole_file.read_text(encoding="utf-8"))
    # What the ask answered, exactly, with what it rested on.
    assert (whole["turn_id"], whole["kind"], whole["question"]) == (turn_id, "ask", QUESTION)
    assert whole["answer"] == reply["answer"] and whole["abstained"] == reply["abstained"]
    assert (whole["model"], whole["persona"]) == (reply["model"], reply["persona"])
    assert whole["prompt_version"]
    assert [(c["ref"], c["quote"]) for c in whole["citations"]] == [
        (c["ref"], c["quote"]) for c in reply["citations"]
    ]
    specifics = reply["grounding"]["specifics"]
    assert [s["text"] for s in whole["claim_check"]["specifics"]] == [s["text"] for s in specifics]
    excerpts = whole["excerpts"]
    assert excerpts and [e["number"] for e in excerpts] == list(range(1, len(excerpts) + 1))
    for e in excerpts:
        assert e["excerpt_sha256"] == hashlib.sha256(e["text"].encode()).hexdigest()
    # Each chunk's note version is its note's fingerprint as retrieval indexed it.
    found = demo_stack.memex("search", QUESTION, "-k", "50", "--include-sensitive", "--json")
    assert found.returncode == 0, found.stderr
    versions = {i["id"]: i["attributes"]["note_version"] for i in json.loads(found.stdout)["items"]
                if i["kind"] == "chunk"}  # fmt: skip
    chunks = [e for e in excerpts if e["kind"] == "chunk"]
    assert chunks and all(re.fullmatch(r"[0-9a-f]{64}", e["note_version"]) for e in chunks)
    assert [e["note_version"] for e in chunks if e["item_id"] in versions] == [
        versions[e["item_id"]] for e in chunks if e["item_id"] in versions
    ]
    therapy = [e for e in excerpts if e["path"] == THERAPY]
    assert therapy and all(e["sensitive"] for e in therapy), [e["path"] for e in excerpts]

    # Over HTTP (a keyless loopback caller, as the owner): the same file when asked for whole.
    url = f"{demo_stack.gateway_url}/v1/evidence/{turn_id}"
    asked_whole = httpx.get(url, params={"include_sensitive": "true"}, timeout=60)
    assert asked_whole.status_code == 200 and asked_whole.json() == whole
    assert asked_whole.headers["content-disposition"] == (
        f'attachment; filename="memex-evidence-{turn_id}.json"'
    )
    # Shared without asking: the therapy excerpts are placeholders, and nothing of them is left.
    shared = httpx.get(url, timeout=60)
    assert shared.status_code == 200
    body = shared.json()
    sensitive = [e for e in excerpts if e["sensitive"]]
    assert body["left_out"]["excerpts"] == len(sensitive) and body["left_out"]["answer"]
    assert [x for x in body["excerpts"] if "left_out" in x] == [
        {"number": e["number"], "left_out": "sensitive"} for e in sensitive
    ]
    assert [x for x in body["excerpts"] if "left_out" not in x] == [
        e for e in excerpts if not e["sensitive"]
    ]
    for e in sensitive:
        for line in (x for x in e["text"].splitlines() if len(x) > 30):
            assert line not in shared.text
    assert THERAPY not in shared.text and body["answer"] != whole["answer"]

    missing = httpx.get(f"{demo_stack.gateway_url}/v1/evidence/no-such-answer", timeout=60)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    gone = demo_stack.memex("evidence", "no-such-answer")
    assert gone.returncode == 4, gone.stderr

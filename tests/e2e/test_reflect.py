"""The learning loop (issue 37) on the real stack: `memex reflect` over the demo vault with the
tests' tiny model, then the beliefs over HTTP and the CLI. What a small model concludes varies,
so the test checks what must hold whatever it says: sensitive notes held back, every model call
in the LLM log under purpose reflect without their text, every verbatim quote really in its note,
and the review and forget paths with their errors. The beliefs it made are forgotten at the end,
so the shared stack's memory is as it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest

from memex.orchestrator.answer.lexical import squash

from .conftest import DemoStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]
SENSITIVE_TEXT = "counsellor since January"  # in a sensitive note of the demo vault


def test_reflect_makes_beliefs_that_rest_on_real_quotes(demo_stack: DemoStack) -> None:
    run = demo_stack.memex("reflect", "--since", "2026-01-01", "--max-episodes", "8", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["episodes_read"] + report["episodes_withheld"] == 8
    assert report["model_calls"] >= 1

    state = Path(demo_stack.env["MEMEX_DATA_DIR"]) / "orchestrator" / "state.db"
    with sqlite3.connect(state) as db:
        prompts = [p for (p,) in db.execute("SELECT prompt FROM llm_log WHERE purpose='reflect'")]
    assert len(prompts) >= report["model_calls"]
    assert not any(SENSITIVE_TEXT in p for p in prompts)

    http = httpx.Client(base_url=demo_stack.gateway_url, timeout=60)
    made = {b["id"]: b for b in report["beliefs"]}
    for belief in made.values():
        assert belief["derived"] and belief["evidence"]
        for quote in belief["evidence"]:
            note = http.get(f"/v1/notes/{quote['episode_id']}").json()
            if quote["support"] == "verbatim":
                assert squash(quote["quote"]) in squash(note["text"])

    listed = http.get("/v1/beliefs").json()["beliefs"]
    assert set(made) <= {b["id"] for b in listed}
    vault = [b for b in listed if not b["derived"]]
    assert vault, "the demo vault's own beliefs are listed too"
    refused = http.post(f"/v1/beliefs/{vault[0]['id']}/reject")
    assert refused.status_code == 400 and "records/beliefs.jsonl" in refused.text
    assert http.post("/v1/beliefs/no-such-belief/confirm").status_code == 404
    bad = http.post("/v1/beliefs/reflect", json={"since": "yesterday"})
    assert bad.status_code == 400
    assert "/v1/beliefs/reflect" in http.get("/openapi.json").json()["paths"]

    for belief_id in made:
        rejected = http.post(f"/v1/beliefs/{belief_id}/reject").json()
        assert rejected["status"] == "rejected"
        assert belief_id not in {b["id"] for b in http.get("/v1/beliefs").json()["beliefs"]}
        forgot = demo_stack.memex("beliefs", "forget", belief_id)
        assert forgot.returncode == 0, forgot.stderr
    shown = demo_stack.memex("beliefs", "list", "--include-rejected", "--json")
    assert shown.returncode == 0, shown.stderr
    assert not set(made) & {b["id"] for b in json.loads(shown.stdout)}
    missing = demo_stack.memex("beliefs", "confirm", "no-such-belief")
    assert missing.returncode == 4 and "memex beliefs list" in missing.stderr

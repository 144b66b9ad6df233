"""The belief routes (issue 37) on a real gateway in front of the fake orchestrator: each route
relays its RPC, shapes the reply, maps the errors to HTTP and is in the OpenAPI spec (the
learning loop itself is tested in services/orchestrator/tests/test_reflect.py and
tests/e2e/test_reflect.py)."""

from __future__ import annotations

import httpx

from .support.harness import Gateway


def test_list_review_and_forget_beliefs(gateway: Gateway) -> None:
    http = httpx.Client(base_url=gateway.url, timeout=30)
    listed = http.get("/v1/beliefs").json()["beliefs"]
    assert {b["id"]: b["derived"] for b in listed} == {"reflect-1": True, "belief-vault": False}
    assert listed[0]["evidence"][0]["support"] in ("verbatim", "paraphrase")
    assert http.post("/v1/beliefs/reflect", json={}).json()["quotes_verbatim"] == 1

    confirmed = http.post("/v1/beliefs/reflect-1/confirm").json()
    assert confirmed["confirmed"] and confirmed["status"] == "active"
    assert http.post("/v1/beliefs/reflect-1/reject").json()["status"] == "rejected"
    assert "reflect-1" not in {b["id"] for b in http.get("/v1/beliefs").json()["beliefs"]}
    rejected = http.get("/v1/beliefs", params={"include_rejected": True}).json()["beliefs"]
    assert "reflect-1" in {b["id"] for b in rejected}

    vault = http.delete("/v1/beliefs/belief-vault")
    assert vault.status_code == 400 and "records/beliefs.jsonl" in vault.text
    assert http.post("/v1/beliefs/nope/confirm").status_code == 404
    assert http.post("/v1/beliefs/reflect", json={"since": "May"}).status_code == 400
    assert http.post("/v1/beliefs/reflect", json={"max_episodes": 999}).status_code == 400
    # JSON Schema's integer: 20.0 is one, 2.5 and true are not (schemathesis sends 0.0).
    assert http.post("/v1/beliefs/reflect", json={"max_episodes": 20.0}).status_code == 200
    for not_whole in (2.5, True, "3"):
        assert http.post("/v1/beliefs/reflect", json={"max_episodes": not_whole}).status_code == 400
    assert http.delete("/v1/beliefs/reflect-1").json() == {"deleted": 1}


def test_the_routes_are_in_the_openapi_spec(gateway: Gateway) -> None:
    paths = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()["paths"]
    assert {"/v1/beliefs", "/v1/beliefs/reflect", "/v1/beliefs/{belief_id}"} <= set(paths)
    assert "post" in paths["/v1/beliefs/{belief_id}/reject"]

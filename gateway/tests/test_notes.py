"""GET /v1/notes/{episode_id}: a cited note for the web page's note view (retrieval GetNote)."""

from __future__ import annotations

import httpx

from memex.gateway.testing import Gateway


def test_a_note_comes_back_with_its_chunks_offsets(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/notes/ep-1", timeout=30)
    assert response.status_code == 200
    note = response.json()
    assert note["title"] == "Flat lease" and note["path"] == "home/Flat lease.md"
    assert note["tags"] == ["home"] and note["sensitive"] is False
    [chunk] = note["chunks"]
    assert note["text"][chunk["start"] : chunk["end"]].startswith("Graham agreed")


def test_an_unknown_note_is_a_404_with_the_error_shape(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/notes/ep-gone", timeout=30)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert "ep-gone" in response.json()["error"]["message"]


def test_the_route_is_in_the_published_spec_with_its_errors(gateway: Gateway) -> None:
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    operation = spec["paths"]["/v1/notes/{episode_id}"]["get"]
    assert {"200", "401", "404"} <= set(operation["responses"])

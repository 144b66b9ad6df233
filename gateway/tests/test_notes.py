"""GET /v1/notes/{episode_id}: a cited note for the web page's note view (orchestrator GetNote)."""

from __future__ import annotations

from pathlib import Path

import httpx

from memex.gateway import apikeys

from .support.fakes import FakeOrchestrator
from .support.harness import Gateway, running_gateway


def test_a_note_comes_back_with_its_chunks_offsets(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/notes/ep-1", timeout=30)
    assert response.status_code == 200
    note = response.json()
    assert note["title"] == "Flat lease" and note["path"] == "home/Flat lease.md"
    assert note["tags"] == ["home"] and note["sensitive"] is False
    [chunk] = note["sections"]
    assert note["text"][chunk["start"] : chunk["end"]].startswith("Graham agreed")


def test_a_note_lists_its_versions_and_an_earlier_one_reads_by_its_id(gateway: Gateway) -> None:
    """docs/as-of.md: every version memex kept, oldest first, the current one last."""
    note = httpx.get(f"{gateway.url}/v1/notes/ep-1", timeout=30).json()
    assert note["versions"] == [
        {
            "episode_id": "ep-1@v1",
            "number": 1,
            "valid_from": "2026-01-10T12:00:00Z",
            "valid_to": "2026-03-01T12:00:00Z",
        },
        {"episode_id": "ep-1", "number": 2, "valid_from": "2026-03-01T12:00:00Z", "valid_to": ""},
    ]
    earlier = httpx.get(f"{gateway.url}/v1/notes/ep-1@v1", timeout=30)
    assert earlier.status_code == 200 and "£900" in earlier.json()["text"]
    assert earlier.json()["episode_id"] == "ep-1@v1"
    assert gateway.orchestrator.reads[-1].episode_id == "ep-1@v1"
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()["components"]["schemas"]
    assert set(spec["NoteVersion"]["properties"]) == {
        "episode_id",
        "number",
        "valid_from",
        "valid_to",
    }
    assert spec["Note"]["properties"]["versions"]["items"]["$ref"].endswith("/NoteVersion")


def test_an_unknown_note_is_a_404_with_the_error_shape(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/notes/ep-gone", timeout=30)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert "ep-gone" in response.json()["error"]["message"]


def test_the_route_is_in_the_published_spec_with_its_errors(gateway: Gateway) -> None:
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    operation = spec["paths"]["/v1/notes/{episode_id}"]["get"]
    assert {"200", "401", "404"} <= set(operation["responses"])


def test_a_sensitive_note_is_asked_for_explicitly(gateway: Gateway) -> None:
    # The fake refuses as the orchestrator's policy does; this checks the gateway forwards the
    # question and maps the refusal (the policy itself: tests/e2e/test_read_policy.py).
    refused = httpx.get(f"{gateway.url}/v1/notes/ep-private", timeout=30)
    assert refused.status_code == 403 and "include_sensitive" in refused.json()["error"]["message"]
    asked = httpx.get(f"{gateway.url}/v1/notes/ep-private?include_sensitive=true", timeout=30)
    assert asked.status_code == 200 and asked.json()["sensitive"] is True


def test_a_key_needs_the_grant_to_ask_for_sensitive_items(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    plain = apikeys.create_key(keys, "plain")
    granted = apikeys.create_key(keys, "granted", sensitive=True)
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        for token, expected in [(plain, 403), (granted, 200)]:
            auth = {"Authorization": f"Bearer {token}"}
            note = c.get("/v1/notes/ep-private?include_sensitive=true", headers=auth)
            inbox = c.get("/v1/inbox?include_sensitive=true", headers=auth)
            search = c.post(
                "/v1/search", json={"query": "x", "include_sensitive": True}, headers=auth
            )
            assert [note.status_code, inbox.status_code, search.status_code] == [expected] * 3
            if expected == 403:
                assert "memex keys create NAME --sensitive" in note.json()["error"]["message"]
            # Without asking, both keys read what is not sensitive.
            assert c.get("/v1/notes/ep-1", headers=auth).status_code == 200
        assert g.orchestrator.reads[-1].include_sensitive is False


def test_old_key_files_load_without_the_grant(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(
        '{"keys": [{"name": "old", "sha256": "ab", "created_at": "2026-01-01T00:00:00Z", '
        '"hint": "mx_abcd"}]}'
    )
    [key] = apikeys.load_keys(keys)
    assert key.name == "old" and key.sensitive is False


def test_a_cited_memos_file_streams_to_play_inline(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/notes/ep-memo/file", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"] == "audio/wav"
    assert response.headers["content-disposition"] == (
        "inline; filename*=UTF-8''2026-03-14%20walk%20memo.wav"
    )
    assert response.content == FakeOrchestrator.MEMO
    assert int(response.headers["content-length"]) == len(FakeOrchestrator.MEMO)


def test_a_file_that_cannot_be_read_says_why(gateway: Gateway) -> None:
    for episode, status, code in [
        ("ep-1", 400, "FAILED_PRECONDITION"),  # a Markdown note is its own text
        ("ep-private", 403, "PERMISSION_DENIED"),
        ("ep-gone", 404, "NOT_FOUND"),
    ]:
        response = httpx.get(f"{gateway.url}/v1/notes/{episode}/file", timeout=30)
        assert response.status_code == status, episode
        assert response.json()["error"]["code"] == code
    asked = httpx.get(f"{gateway.url}/v1/notes/ep-private/file?include_sensitive=true", timeout=30)
    assert asked.status_code == 200
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    operation = spec["paths"]["/v1/notes/{episode_id}/file"]["get"]
    assert {"audio/*", "application/pdf"} <= set(operation["responses"]["200"]["content"])

"""Every JSON endpoint against fake services over real gRPC: shapes, status codes, request ids."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import httpx
import pytest

from memex.gateway import convert
from memex.gateway.errors import HTTP_STATUS, http_status
from memex.orchestrator.v1 import orchestrator_pb2 as opb

from .support.fake_data import FUTURE
from .support.harness import Gateway

TABLE = {
    "INVALID_ARGUMENT": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "UNIMPLEMENTED": 500,
    "DATA_LOSS": 500,
}


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        yield c


def test_ask_returns_the_structured_answer_and_passes_the_request_id(
    client: httpx.Client, gateway: Gateway
) -> None:
    r = client.post(
        "/v1/ask",
        json={"question": "deposit?", "persona": "skeptic"},
        headers={"X-Request-ID": "req-42"},
    )
    assert r.status_code == 200
    body = r.json()
    assert body["answer"] == "Graham returned £1,030."
    assert body["persona"] == "skeptic"
    assert body["citations"] == [
        {
            "ref": "[[Flat lease]]",
            "item_id": "chunk-1",
            "episode_id": "ep-1",
            "path": "home/Flat lease.md",
            "quote": "return £1,030",
            "support": "verbatim",
            "support_label": "verbatim",
        }
    ]
    assert body["grounding"] == {
        "cited": 1,
        "grounded": 1,
        "score": 1.0,
        "dropped": [],
        "specifics": [],
        "dropped_claims": [],
    }
    assert body["stages"] == ["plan", "retrieve", "synthesize", "ground_check"]
    assert r.headers["x-request-id"] == "req-42"
    assert gateway.orchestrator.request_ids[-1] == "req-42"


def test_a_request_without_an_id_gets_a_fresh_one(client: httpx.Client, gateway: Gateway) -> None:
    r = client.post("/v1/ask", json={"question": "deposit?"}, headers={"X-Request-ID": "bad id!"})
    assert r.status_code == 200
    assert r.headers["x-request-id"] != "bad id!" and len(r.headers["x-request-id"]) == 32
    assert gateway.orchestrator.request_ids[-1] == r.headers["x-request-id"]


@pytest.mark.parametrize(("name", "status"), TABLE.items())
def test_grpc_statuses_map_to_http_by_one_table(
    client: httpx.Client, name: str, status: int
) -> None:
    assert http_status(grpc.StatusCode[name]) == status
    r = client.post("/v1/ask", json={"question": f"status:{name}"})
    assert r.status_code == status
    error = r.json()["error"]
    if status == 500:  # no domain meaning: a fixed message naming the request id, not the peer's
        assert error["code"] == "INTERNAL"
        assert r.headers["x-request-id"] in error["message"]
    else:
        assert error == {"code": name, "message": "as asked"}


def test_the_table_covers_every_status_it_names() -> None:
    assert set(HTTP_STATUS.values()) <= {400, 401, 403, 404, 409, 429, 499, 503, 504}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{not json", "JSON"),
        (b'{"question": ""}', "question"),
        (b'{"question": "x", "limit": 99}', "limit"),
        (b'{"question": "x", "colour": "red"}', "colour"),
        (b"[]", "body"),
        (b'{"persona": "analyst"}', "question"),
    ],
)
def test_malformed_or_invalid_bodies_are_400_with_a_message(
    client: httpx.Client, body: bytes, fragment: str
) -> None:
    r = client.post("/v1/ask", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "INVALID_ARGUMENT" and fragment in error["message"]


def test_unknown_paths_and_methods_answer_in_the_error_shape(client: httpx.Client) -> None:
    r = client.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["code"] == "NOT_FOUND"
    r = client.get("/v1/ask")
    assert r.status_code == 405 and "error" in r.json()


def test_search(client: httpx.Client) -> None:
    r = client.post("/v1/search", json={"query": "deposit", "limit": 5})
    assert r.status_code == 200
    [item] = r.json()["items"]
    assert item["kind"] == "chunk" and item["citation"] == "[[Flat lease]]"
    assert item["channel_scores"] == [{"channel": "vector", "rank": 1, "score": 0.9}]
    assert item["provenance"]["title"] == "Flat lease"
    assert r.json()["turn_id"] == "turn-search"


def test_ask_search_and_chat_as_of_a_day_reach_the_orchestrator(
    client: httpx.Client, gateway: Gateway
) -> None:
    """docs/as-of.md: the day goes to the orchestrator, and the answer (chat: its meta event)
    says which day answered."""
    r = client.post("/v1/ask", json={"question": "deposit?", "as_of": "2026-02-01"})
    assert r.status_code == 200 and r.json()["as_of"] == "2026-02-01"
    assert gateway.orchestrator.ask_requests[-1].as_of == "2026-02-01"
    assert client.post("/v1/ask", json={"question": "deposit?"}).json()["as_of"] == ""
    assert gateway.orchestrator.ask_requests[-1].as_of == ""
    r = client.post("/v1/search", json={"query": "deposit", "as_of": "2026-02-01"})
    assert r.status_code == 200 and r.json()["items"]
    assert gateway.orchestrator.reads[-1].filters.as_of == "2026-02-01"
    r = client.post("/v1/chat", json={"message": "deposit?", "as_of": "2026-02-01"})
    assert r.status_code == 200 and '"as_of":"2026-02-01"' in r.text.split("event: delta")[0]
    assert gateway.orchestrator.chat_requests[-1].as_of == "2026-02-01"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/ask", {"question": "deposit?"}),
        ("/v1/search", {"query": "deposit"}),
        ("/v1/chat", {"message": "deposit?"}),
    ],
)
def test_an_as_of_that_is_not_a_past_day_is_a_400(
    client: httpx.Client, gateway: Gateway, path: str, body: dict[str, str]
) -> None:
    def asked() -> int:
        o = gateway.orchestrator
        return len(o.ask_requests) + len(o.reads) + len(o.chat_requests)

    sent = asked()
    for bad in ("tomorrow", "2026-2-1", "2026-02-01T00:00:00Z", " 2026-02-01"):
        r = client.post(path, json={**body, "as_of": bad})
        assert r.status_code == 400, bad
        error = r.json()["error"]
        assert error["code"] == "INVALID_ARGUMENT" and "as_of" in error["message"], error
    # Refused by its shape, before the orchestrator was asked.
    assert asked() == sent
    # A day after today has the shape: the orchestrator refuses it, and its words come back.
    r = client.post(path, json={**body, "as_of": FUTURE})
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith(f"as_of {FUTURE} is after today")


def test_records_timeline_and_inbox_as_of_a_day_reach_the_orchestrator(
    client: httpx.Client, gateway: Gateway
) -> None:
    """docs/as-of.md: the structured reads take the day too; a bad one is a 400."""
    o = gateway.orchestrator
    r = client.post("/v1/records/query", json={"collection": "inbox", "as_of": "2026-02-01"})
    assert r.status_code == 200 and o.queries[-1].filters.as_of == "2026-02-01"
    r = client.get("/v1/people/graham/timeline", params={"as_of": "2026-02-01"})
    assert r.status_code == 200 and o.reads[-1].filters.as_of == "2026-02-01"
    r = client.get("/v1/inbox", params={"as_of": "2026-02-01"})
    assert r.status_code == 200 and o.reads[-1].as_of == "2026-02-01"
    assert client.get("/v1/inbox").status_code == 200 and o.reads[-1].as_of == ""
    for bad in (
        client.get("/v1/inbox", params={"as_of": "Feb 1"}),
        client.get("/v1/people/graham/timeline", params={"as_of": FUTURE}),
        client.post("/v1/records/query", json={"collection": "inbox", "as_of": "2026-2-1"}),
    ):
        assert bad.status_code == 400 and "as_of" in bad.text, bad.text


def test_the_spec_documents_as_of_where_it_is_taken(client: httpx.Client) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("AskRequest", "SearchRequest", "ChatRequest", "RecordsQuery"):
        as_of = schemas[name]["properties"]["as_of"]
        assert as_of["pattern"] == r"^(\d{4}-\d{2}-\d{2})?$" and "as-of" in as_of["description"]
    assert "as_of" in schemas["AskResponse"]["properties"]


def test_records_query_passes_filters_and_maps_permission(
    client: httpx.Client, gateway: Gateway
) -> None:
    r = client.post(
        "/v1/records/query",
        json={
            "collection": "inbox",
            "filters": [{"field": "status", "op": "in", "value": ["open", "done"]}],
            "sort": "-date",
            "limit": 10,
        },
    )
    assert r.status_code == 200
    records = r.json()["records"]
    assert [rec["fields"]["title"] for rec in records] == ["Call the landlord", "Pay the allotment"]
    sent = gateway.orchestrator.queries[-1]
    assert sent.filter[0].field == "status" and sent.filter[0].op == "in"
    assert [v.string_value for v in sent.filter[0].value.list_value.values] == ["open", "done"]
    assert sent.sort == "-date" and sent.limit == 10

    refused = client.post("/v1/records/query", json={"collection": "secrets"})
    assert refused.status_code == 403 and "allowlisted" in refused.json()["error"]["message"]
    bad_op = client.post(
        "/v1/records/query",
        json={"collection": "inbox", "filters": [{"field": "x", "op": "like", "value": 1}]},
    )
    assert bad_op.status_code == 400


def test_timeline_and_inbox(client: httpx.Client) -> None:
    r = client.get("/v1/people/graham/timeline")
    assert r.status_code == 200
    assert r.json()["entity"]["fields"]["name"] == "Graham"
    assert r.json()["entries"][0]["date"] == "2026-02-01"
    missing = client.get("/v1/people/nobody/timeline")
    assert missing.status_code == 404 and "nobody" in missing.json()["error"]["message"]

    assert [i["id"] for i in client.get("/v1/inbox").json()["items"]] == ["i1"]
    every = client.get("/v1/inbox", params={"include_done": "true", "limit": 5}).json()
    assert [i["id"] for i in every["items"]] == ["i1", "i2"]


def test_conversations_list_get_delete(client: httpx.Client) -> None:
    with client.stream("POST", "/v1/chat", json={"message": "about the deposit"}) as r:
        lines = list(r.iter_lines())
    conversation_id = next(line for line in lines if "conversation_id" in line).split('"')[3]

    listed = client.get("/v1/conversations", params={"limit": 100}).json()["conversations"]
    assert conversation_id in [c["id"] for c in listed]
    got = client.get(f"/v1/conversations/{conversation_id}")
    assert got.status_code == 200
    assert got.json()["conversation"]["title"] == "about the deposit"
    assert [m["role"] for m in got.json()["messages"]] == ["user", "assistant"]
    assert got.json()["messages"][1]["citations"][0]["support"] == "verbatim"

    deleted = client.delete(f"/v1/conversations/{conversation_id}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert client.get(f"/v1/conversations/{conversation_id}").status_code == 404
    again = client.delete(f"/v1/conversations/{conversation_id}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "NOT_FOUND"


def test_unknown_conversation_ids_are_404(client: httpx.Client) -> None:
    assert client.get("/v1/conversations/no-such-id").status_code == 404
    r = client.post("/v1/chat", json={"message": "hello", "conversation_id": "no-such-id"})
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")
    assert "no-such-id" in r.json()["error"]["message"]


def test_queued_turns(client: httpx.Client) -> None:
    created = client.post("/v1/turns", json={"text": "What does the allotment cost?"})
    assert created.status_code == 202
    turn = created.json()["turn"]
    assert turn["state"] == "pending" and turn["role"] == "user" and turn["thread_id"]

    assert client.get(f"/v1/turns/{turn['id']}").json()["turn"] == turn
    follow = client.post(
        "/v1/turns", json={"text": "And the deposit?", "thread_id": turn["thread_id"]}
    )
    assert follow.status_code == 202 and follow.json()["turn"]["thread_id"] == turn["thread_id"]

    threads = client.get("/v1/threads").json()["threads"]
    assert turn["thread_id"] in [t["id"] for t in threads]
    turns = client.get(f"/v1/threads/{turn['thread_id']}/turns").json()["turns"]
    assert [t["text"] for t in turns] == ["What does the allotment cost?", "And the deposit?"]

    assert client.get("/v1/turns/no-such-turn").status_code == 404
    assert client.get("/v1/threads/no-such-thread/turns").status_code == 404
    orphan = client.post("/v1/turns", json={"text": "hi", "thread_id": "no-such-thread"})
    assert orphan.status_code == 404


def test_a_queued_turn_carries_its_day(client: httpx.Client, gateway: Gateway) -> None:
    created = client.post("/v1/turns", json={"text": "My plot then?", "as_of": "2026-05-01"})
    assert created.status_code == 202
    assert gateway.orchestrator.turn_requests[-1].as_of == "2026-05-01"
    bad = client.post("/v1/turns", json={"text": "My plot then?", "as_of": "1 May"})
    assert bad.status_code == 400 and "as_of" in bad.text


def test_metrics_count_requests_by_route_and_status(client: httpx.Client) -> None:
    client.post("/v1/ask", json={"question": "deposit?"})
    client.get("/v1/conversations/no-such-id")
    text = client.get("/metrics").text
    assert 'memex_gateway_requests_total{method="POST",route="/v1/ask",status="200"}' in text
    assert (
        'memex_gateway_requests_total{method="GET",route="/v1/conversations/{conversation_id}",'
        'status="404"}' in text
    )
    assert "memex_gateway_request_seconds_bucket" in text
    assert "memex_gateway_open_streams" in text


def test_health_is_shallow_by_default_and_deep_on_request(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    deep = client.get("/healthz", params={"deep": "true"})
    assert deep.status_code == 200
    assert deep.json() == {
        "status": "ok",
        "services": {"orchestrator": "SERVING", "retrieval": "SERVING"},
    }


def test_openapi_documents_every_route_and_error_status(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    for path in (
        "/v1/ask",
        "/v1/chat",
        "/v1/chat/completions",
        "/v1/models",
        "/v1/models/{model_id}",
        "/v1/personas",
        "/v1/search",
        "/v1/records/query",
        "/v1/people/{person}/timeline",
        "/v1/inbox",
        "/v1/conversations",
        "/v1/conversations/{conversation_id}",
        "/v1/turns",
        "/v1/turns/{turn_id}",
        "/v1/threads",
        "/v1/threads/{thread_id}/turns",
        "/v1/threads/{thread_id}/events",
        "/healthz",
        "/metrics",
    ):
        assert path in spec["paths"], path
    ask = spec["paths"]["/v1/ask"]["post"]
    assert {"400", "401", "404", "413", "429", "503", "504"} <= set(ask["responses"])
    assert ask["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "AskRequest"
    )


def test_the_claim_check_reaches_the_client_as_the_grounding_report_lists_it() -> None:
    """Issue 35: every specific with its verdict, and the sentences cut, in the JSON answer."""
    reply = opb.AskResponse(
        answer="Use `--depth 1` [[clone]].",
        grounding=opb.GroundingReport(
            cited=1,
            grounded=1,
            score=1.0,
            specifics=[
                opb.CheckedSpecific(
                    text="--depth 1", kind="code", verdict="supported", ref="[[clone]]"
                ),
                opb.CheckedSpecific(text="2.4.0", kind="version", verdict="unsupported"),
            ],
            dropped_claims=["It started in Ruby 2.4.0."],
        ),
    )
    grounding = convert.ask(reply).model_dump()["grounding"]
    assert grounding["specifics"] == [
        {"text": "--depth 1", "kind": "code", "verdict": "supported", "ref": "[[clone]]"},
        {"text": "2.4.0", "kind": "version", "verdict": "unsupported", "ref": ""},
    ]
    assert grounding["dropped_claims"] == ["It started in Ruby 2.4.0."]

"""`/v1/chat/completions` with the official `openai` package as the client, both modes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from memex.gateway.continuations import Continuations

from .support.harness import Gateway


@pytest.fixture
def client(gateway: Gateway) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{gateway.url}/v1", api_key="unused-on-loopback", max_retries=0) as c:
        yield c


CITATION = {
    "ref": "[[Flat lease]]",
    "item_id": "chunk-1",
    "episode_id": "ep-1",
    "path": "home/Flat lease.md",
    "quote": "return £1,030",
    "support": "verbatim",
    "support_label": "verbatim",
}


def test_a_completion_carries_the_reply_and_the_memex_extension(
    gateway: Gateway, client: OpenAI
) -> None:
    completion = client.chat.completions.create(
        model="memex/analyst",
        messages=[
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "How much did Graham return?"},
        ],
    )
    assert completion.object == "chat.completion"
    assert completion.model == "fake"
    [choice] = completion.choices
    assert choice.message.role == "assistant"
    assert choice.message.content == "Graham returned £1,030 of the deposit."
    assert choice.finish_reason == "stop"
    extension: Any = completion.model_extra["memex"]  # type: ignore[index]
    assert extension["citations"] == [CITATION]
    assert extension["withheld"] == 1
    assert extension["conversation_id"].startswith("conv-")
    sent = gateway.orchestrator.chat_requests[-1]
    assert sent.persona == "analyst"
    assert sent.message == "How much did Graham return?"  # system messages are not sent


def test_a_streamed_completion_ends_with_the_extension_on_the_final_chunk(client: OpenAI) -> None:
    stream = client.chat.completions.create(
        model="memex",
        messages=[{"role": "user", "content": "How much did Graham return?"}],
        stream=True,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "Graham returned £1,030 of the deposit."
    assert chunks[0].choices[0].delta.role == "assistant"
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop"
    extension: Any = final.model_extra["memex"]  # type: ignore[index]
    assert extension["citations"] == [CITATION]
    assert all("memex" not in (c.model_extra or {}) for c in chunks[:-1])
    assert len({c.id for c in chunks}) == 1


def test_earlier_messages_ride_along_when_no_conversation_is_continued(
    gateway: Gateway, client: OpenAI
) -> None:
    client.chat.completions.create(
        model="memex",
        messages=[
            {"role": "user", "content": "Who is Graham?"},
            {"role": "assistant", "content": "Your landlord."},
            {"role": "user", "content": [{"type": "text", "text": "What did he return?"}]},
        ],
    )
    sent = gateway.orchestrator.chat_requests[-1]
    assert sent.conversation_id == ""
    assert sent.message == (
        "What did he return?\n\nEarlier in this conversation:\n"
        "- user: Who is Graham?\n- assistant: Your landlord."
    )


def test_a_memex_conversation_can_be_continued(gateway: Gateway, client: OpenAI) -> None:
    first = client.chat.completions.create(
        model="memex", messages=[{"role": "user", "content": "Who is Graham?"}]
    )
    conversation_id = first.model_extra["memex"]["conversation_id"]  # type: ignore[index]
    second = client.chat.completions.create(
        model="memex",
        messages=[
            {"role": "user", "content": "Who is Graham?"},
            {"role": "assistant", "content": "Your landlord."},
            {"role": "user", "content": "What did he return?"},
        ],
        extra_body={"memex": {"conversation_id": conversation_id}},
    )
    assert second.model_extra["memex"]["conversation_id"] == conversation_id  # type: ignore[index]
    sent = gateway.orchestrator.chat_requests[-1]
    assert sent.conversation_id == conversation_id
    assert sent.message == "What did he return?"  # the stored history is the context


def test_errors_reach_openai_clients_as_their_exceptions(client: OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(
            model="memex", messages=[{"role": "assistant", "content": "hello"}]
        )
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="memex",
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"memex": {"conversation_id": "no-such-id"}},
        )
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(
            model="memex", messages=[{"role": "user", "content": "fail after"}]
        )
    assert raised.value.status_code == 503
    stream = client.chat.completions.create(
        model="memex", messages=[{"role": "user", "content": "fail after"}], stream=True
    )
    with pytest.raises(openai.APIError, match="reasoner gone"):
        list(stream)


def test_models_lists_every_persona_and_the_default(client: OpenAI) -> None:
    listed = client.models.list()
    ids = [m.id for m in listed.data]
    # "memex" (the chat default persona), then one model per persona, a user's own included.
    assert ids == ["memex", "memex/analyst", "memex/friend", "memex/historian"]
    assert {m.object for m in listed.data} == {"model"}
    assert {m.owned_by for m in listed.data} == {"memex"}
    assert len({m.created for m in listed.data}) == 1 and listed.data[0].created > 0
    default: Any = listed.data[0].model_extra["memex"]  # type: ignore[index]
    assert default == {"persona": "friend", "description": "Warm and brief."}
    one = client.models.retrieve("memex/historian")
    assert (one.id, one.object, one.owned_by) == ("memex/historian", "model", "memex")


def test_models_answers_in_openais_list_shape(gateway: Gateway) -> None:
    body = httpx.get(f"{gateway.url}/v1/models").json()
    assert body["object"] == "list"
    assert set(body["data"][1]) == {"id", "object", "created", "owned_by", "memex"}
    # The slash in a model id may arrive encoded too.
    encoded = httpx.get(f"{gateway.url}/v1/models/memex%2Fanalyst")
    assert encoded.status_code == 200 and encoded.json()["id"] == "memex/analyst"


def test_an_unknown_model_is_a_404_in_openais_error_shape(gateway: Gateway, client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    error: Any = raised.value.body
    assert error == {
        "code": "NOT_FOUND",
        "message": "model 'gpt-4o' does not exist; memex serves memex, memex/analyst, "
        "memex/friend, memex/historian (GET /v1/models lists them)",
        "type": "invalid_request_error",
        "param": "model",
    }
    before = len(gateway.orchestrator.chat_requests)
    for model in ("memex/poet", "memex/", "Memex"):
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=True
            )
    assert len(gateway.orchestrator.chat_requests) == before  # refused before any chat started
    with pytest.raises(openai.NotFoundError, match="memex serves memex, memex/analyst"):
        client.models.retrieve("memex/poet")


def test_the_model_picks_the_persona_and_the_extension_overrides_it(
    gateway: Gateway, client: OpenAI
) -> None:
    question = [{"role": "user", "content": "hi"}]
    client.chat.completions.create(model="memex/historian", messages=question)  # type: ignore[arg-type]
    assert gateway.orchestrator.chat_requests[-1].persona == "historian"
    client.chat.completions.create(model="memex", messages=question)  # type: ignore[arg-type]
    assert gateway.orchestrator.chat_requests[-1].persona == ""  # the orchestrator's default
    client.chat.completions.create(
        model="memex/analyst",
        messages=question,  # type: ignore[arg-type]
        extra_body={"memex": {"persona": "friend"}},
    )
    assert gateway.orchestrator.chat_requests[-1].persona == "friend"


def test_the_extension_asks_as_of_a_day(gateway: Gateway, client: OpenAI) -> None:
    question = [{"role": "user", "content": "hi"}]
    client.chat.completions.create(
        model="memex",
        messages=question,  # type: ignore[arg-type]
        extra_body={"memex": {"as_of": "2026-02-01"}},
    )
    assert gateway.orchestrator.chat_requests[-1].as_of == "2026-02-01"
    bad = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "memex", "messages": question, "memex": {"as_of": "1 Feb"}},
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "memex.as_of"


def test_other_errors_on_openai_routes_carry_openais_type_too(gateway: Gateway) -> None:
    bad = httpx.post(
        f"{gateway.url}/v1/chat/completions", json={"model": "memex", "messages": "hi"}
    )
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert (error["code"], error["type"], error["param"]) == (
        "INVALID_ARGUMENT",
        "invalid_request_error",
        "messages",
    )
    # Routes outside the OpenAI-compatible ones keep the plain shape.
    plain = httpx.post(f"{gateway.url}/v1/chat", json={"message": ""})
    assert plain.status_code == 400 and set(plain.json()["error"]) == {"code", "message"}


def test_an_error_mid_stream_has_the_routes_error_shape(gateway: Gateway) -> None:
    body = {"model": "memex", "messages": [{"role": "user", "content": "fail after"}]}
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", json={**body, "stream": True}
    ) as r:
        frames = [line[len("data: ") :] for line in r.iter_lines() if line.startswith("data: ")]
    # The last frame is the error, in the body every other error of the route has (OpenAI's
    # type included), and no [DONE] follows it.
    assert json.loads(frames[-1]) == {
        "error": {
            "code": "UNAVAILABLE",
            "message": "reasoner gone",
            "type": "server_error",
            "param": None,
        }
    }


def test_personas_lists_them_with_their_settings(gateway: Gateway) -> None:
    body = httpx.get(f"{gateway.url}/v1/personas").json()
    assert [p["name"] for p in body["personas"]] == ["analyst", "friend", "historian"]
    assert (body["default_ask"], body["default_chat"]) == ("analyst", "friend")
    historian = body["personas"][2]
    assert historian["channels"] == ["vector", "observations"]
    assert historian["time_window_days"] == 365 and historian["description"]
    assert body["personas"][0]["default_for_ask"] and body["personas"][1]["default_for_chat"]


def follow_up(first_question: str, reply: str, question: str) -> list[Any]:
    return [
        {"role": "system", "content": "Be brief."},  # ignored, and not part of the history
        {"role": "user", "content": first_question},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": question},
    ]


def test_a_clients_history_continues_the_conversation_its_reply_came_from(
    gateway: Gateway, client: OpenAI
) -> None:
    chunks = list(
        client.chat.completions.create(
            model="memex/analyst",
            messages=[{"role": "user", "content": "Who returned the deposit?"}],
            stream=True,
        )
    )
    reply = "".join(c.choices[0].delta.content or "" for c in chunks)
    conversation_id = chunks[-1].model_extra["memex"]["conversation_id"]  # type: ignore[index]
    messages = follow_up("Who returned the deposit?", reply, "How much?")
    second = client.chat.completions.create(model="memex/analyst", messages=messages)
    sent = gateway.orchestrator.chat_requests[-1]
    assert (sent.conversation_id, sent.message) == (conversation_id, "How much?")
    assert second.model_extra["memex"]["conversation_id"] == conversation_id  # type: ignore[index]
    # The continued reply can itself be continued, by the whole history so far.
    third = [*messages, {"role": "assistant", "content": second.choices[0].message.content}]
    third.append({"role": "user", "content": "When?"})
    client.chat.completions.create(model="memex/analyst", messages=third)
    sent = gateway.orchestrator.chat_requests[-1]
    assert (sent.conversation_id, sent.message) == (conversation_id, "When?")
    # The same history again (a regenerated answer, a branch) starts a new conversation instead.
    client.chat.completions.create(model="memex/analyst", messages=messages)
    sent = gateway.orchestrator.chat_requests[-1]
    assert sent.conversation_id == ""
    assert sent.message.startswith("How much?\n\nEarlier in this conversation:\n")


def test_an_edited_or_deleted_history_starts_a_new_conversation(
    gateway: Gateway, client: OpenAI
) -> None:
    first = client.chat.completions.create(
        model="memex", messages=[{"role": "user", "content": "What about the boiler?"}]
    )
    reply = first.choices[0].message.content or ""
    edited = follow_up("What about the boiler?", reply + " (edited)", "And?")
    client.chat.completions.create(model="memex", messages=edited)
    assert gateway.orchestrator.chat_requests[-1].conversation_id == ""
    # Deleted since: the history rides along in a new conversation instead of a 404.
    conversation_id = first.model_extra["memex"]["conversation_id"]  # type: ignore[index]
    assert httpx.delete(f"{gateway.url}/v1/conversations/{conversation_id}").status_code == 204
    again = client.chat.completions.create(
        model="memex", messages=follow_up("What about the boiler?", reply, "And?")
    )
    sent = gateway.orchestrator.chat_requests[-1]
    assert sent.conversation_id == "" and "Earlier in this conversation" in sent.message
    assert again.model_extra["memex"]["conversation_id"] != conversation_id  # type: ignore[index]


def test_continuations_are_per_caller_bounded_and_taken_once() -> None:
    remembered = Continuations(max_entries=2)
    history = [("user", "q"), ("assistant", "a")]
    remembered.remember("key:ann", history, "conv-1")
    assert remembered.take("key:bob", history) == ""
    assert remembered.take("key:ann", history[:1]) == ""  # must end with a reply
    assert remembered.take("key:ann", history) == "conv-1"
    assert remembered.take("key:ann", history) == ""
    for n in range(3):
        remembered.remember("key:ann", [("user", f"q{n}"), ("assistant", "a")], f"conv-{n}")
    assert len(remembered) == 2
    assert remembered.take("key:ann", [("user", "q0"), ("assistant", "a")]) == ""

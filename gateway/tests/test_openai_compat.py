"""`/v1/chat/completions` with the official `openai` package as the client, both modes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI

from memex.gateway.testing import Gateway


@pytest.fixture
def client(gateway: Gateway) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{gateway.url}/v1", api_key="unused-on-loopback", max_retries=0) as c:
        yield c


CITATION = {
    "ref": "[[Flat lease]]",
    "item_id": "chunk-1",
    "episode_id": "ep-1",
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

"""Unit tests of the code around the OpenAI SDK: status mapping, retries only before the first
token, the prompt fallback for structured output, and the API key kept out of logs and messages.

The HTTP side is an httpx MockTransport here, because no real server can be told to answer 429
or 503 on cue; the happy paths run against a real server in test_openai.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
from pydantic import SecretStr

from memex.reasoner.engine import ChatMessage, Delta, Finished, GenerationRequest, Sampling
from memex.reasoner.errors import InvalidOutput
from memex.reasoner.openai_engine import OpenAICompatibleEngine
from memex.reasoner.schema import validate_output
from memex.shared import errors

KEY = "sk-test-0123456789abcdef"
REQUEST = GenerationRequest(
    messages=(ChatMessage("user", "hi"),), sampling=Sampling(temperature=0, top_p=1, max_tokens=8)
)


def sse(*pieces: str, usage: bool = True) -> bytes:
    frames = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}],
        }
        for p in pieces
    ]
    frames.append(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    if usage:
        frames.append(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
            }
        )
    body = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
    return body.encode()


def ok(*pieces: str) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse(*pieces))


def engine_with(
    handler: Callable[[httpx2.Request], httpx2.Response], **options: Any
) -> OpenAICompatibleEngine:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAICompatibleEngine(
        base_url="http://model.invalid/v1",
        model="m",
        api_key=SecretStr(KEY),
        http_client=client,
        backoff_seconds=0.01,
        **options,
    )


async def run(
    engine: OpenAICompatibleEngine, request: GenerationRequest = REQUEST
) -> tuple[str, Finished]:
    text, finished = "", None
    async for event in engine.generate(request):
        if isinstance(event, Delta):
            text += event.text
        else:
            finished = event
    assert finished is not None
    return text, finished


async def test_usage_from_the_server_is_reported() -> None:
    text, finished = await run(engine_with(lambda request: ok("Hel", "lo")))
    assert text == "Hello"
    assert (finished.finish_reason, finished.prompt_tokens, finished.completion_tokens) == (
        "stop",
        9,
        2,
    )


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        (429, errors.ResourceExhausted, "rate-limiting (429)"),
        (503, errors.Unavailable, "failed (503)"),
        (404, errors.NotFound, "does not serve model 'm'"),
        (400, errors.InvalidArgument, "rejected the request (400)"),
        (401, errors.FailedPrecondition, "check MEMEX_REASONER_OPENAI_API_KEY"),
    ],
)
async def test_statuses_map_to_domain_errors(
    status: int, error: type[errors.MemexError], words: str
) -> None:
    calls = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        return httpx2.Response(status, json={"error": {"message": f"nope, key {KEY}"}})

    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")) as caught:
        await run(engine_with(handler, retries=2))
    assert KEY not in caught.value.message
    assert calls == (3 if status in (429, 503) else 1)  # only 429 and 5xx are retried


async def test_a_429_is_retried_before_the_first_token() -> None:
    answers = iter([httpx2.Response(429, json={"error": {"message": "slow down"}}), ok("fine")])
    text, _ = await run(engine_with(lambda request: next(answers), retries=2))
    assert text == "fine"


async def test_no_retry_once_a_token_was_streamed() -> None:
    calls = 0

    async def broken() -> AsyncIterator[bytes]:
        yield sse("first", usage=False).split(b"\n\n")[0] + b"\n\n"
        raise httpx2.ReadError("connection reset")

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=broken())

    seen: list[str] = []

    async def consume() -> None:
        async for event in engine_with(handler, retries=3).generate(REQUEST):
            if isinstance(event, Delta):
                seen.append(event.text)

    with pytest.raises(errors.Unavailable):
        await consume()
    assert (seen, calls) == (["first"], 1)


async def test_the_prompt_fallback_asks_for_json_and_the_core_validates_it() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        if "response_format" in bodies[-1]:
            return httpx2.Response(422, json={"detail": "response_format.type: unsupported"})
        return ok('{"n": ', "1}")

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    request = GenerationRequest(
        messages=REQUEST.messages, sampling=REQUEST.sampling, json_schema=schema
    )
    text, _ = await run(engine_with(handler), request)
    validate_output(text, schema)
    kinds = [b.get("response_format", {}).get("type") for b in bodies]
    assert kinds == ["json_schema", "json_object", None]
    assert "must satisfy this JSON Schema" in bodies[-1]["messages"][0]["content"]
    with pytest.raises(InvalidOutput, match="does not match the schema at n"):
        validate_output('{"n": "one"}', schema)


async def test_the_api_key_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        return httpx2.Response(503, json={"error": {"message": f"echo {KEY}"}})

    engine = engine_with(handler, retries=1)
    await engine.check()
    with pytest.raises(errors.Unavailable):
        await run(engine)
    assert KEY not in caplog.text

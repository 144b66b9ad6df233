"""The OpenAI-compatible engine against a real server nobody here wrote: llama-cpp-python's own
OpenAI-compatible server (`python -m llama_cpp.server`) with the default model, on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import grpc
import jsonschema
import pytest

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.openai_engine import OpenAICompatibleEngine
from memex.reasoner.v1 import reasoner_pb2
from memex.testing import free_port
from memex.testing.reasoner import Served, collect, served, user

pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "sunny": {"type": "boolean"}},
    "required": ["city", "sunny"],
}


def remote_settings(base_url: str, **overrides: object) -> ReasonerSettings:
    values: dict[str, object] = {
        "engine": "openai",
        "port": 0,
        "openai_base_url": base_url,
        "openai_model": "smollm2",
        "context_length": 2048,
    }
    values.update(overrides)
    return ReasonerSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def remote(llama_server: str) -> AsyncIterator[Served]:
    async with served(remote_settings(llama_server)) as reasoner:
        yield reasoner


async def test_info_marks_the_server_remote_unless_configured_local(
    remote: Served, llama_server: str
) -> None:
    info = await remote.stub.Info(reasoner_pb2.InfoRequest())
    assert (info.engine, info.model, info.context_length, info.local) == (
        "openai-compatible",
        "smollm2",
        2048,
        False,
    )
    async with served(remote_settings(llama_server, openai_local=True)) as local:
        assert (await local.stub.Info(reasoner_pb2.InfoRequest())).local is True


async def test_a_reply_streams_from_the_server(remote: Served) -> None:
    deltas, final = await collect(
        remote.stub.Generate(user("Write one sentence about tea.", max_tokens=16, temperature=0))
    )
    assert "tea" in "".join(deltas).lower()
    assert len(deltas) > 1
    assert final.finish_reason in (
        reasoner_pb2.FINISH_REASON_STOP,
        reasoner_pb2.FINISH_REASON_LENGTH,
    )
    assert 1 <= final.usage.completion_tokens <= 16
    assert final.model == "smollm2"


async def test_max_tokens_gives_length(remote: Served) -> None:
    _, final = await collect(
        remote.stub.Generate(user("Count from one to one hundred.", max_tokens=4, temperature=0))
    )
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_LENGTH


async def test_structured_output_falls_back_to_what_the_server_supports(remote: Served) -> None:
    # llama_cpp.server refuses response_format json_schema (422); the engine moves on to
    # json_object with a schema, which that server turns into a grammar.
    request = user("Describe the weather in Paris.", max_tokens=48, temperature=0)
    request.json_schema = json.dumps(SCHEMA)
    deltas, final = await collect(remote.stub.Generate(request))
    jsonschema.validate(json.loads("".join(deltas)), SCHEMA)
    engine = remote.core.engine
    assert isinstance(engine, OpenAICompatibleEngine)
    assert engine._modes[0] == "json_object"
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_STOP


async def test_client_cancel_reaches_the_server(remote: Served) -> None:
    call = remote.stub.Generate(user("Tell me a very long story.", max_tokens=1500))
    await call.read()
    cancelled = time.perf_counter()
    call.cancel()
    await asyncio.wait_for(remote.core.scheduler.idle.wait(), 5)
    assert time.perf_counter() - cancelled < 0.5
    # The server serves one request at a time: had it kept generating the 1,500 tokens (a minute
    # or more here), this short one would wait for them.
    started = time.perf_counter()
    await collect(remote.stub.Generate(user("Hi", max_tokens=2)))
    assert time.perf_counter() - started < 15


async def test_a_server_that_is_down_gives_unavailable() -> None:
    settings = remote_settings(f"http://127.0.0.1:{free_port()}/v1", openai_retries=1)
    async with served(settings) as reasoner:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(reasoner.stub.Generate(user("hello")))
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "cannot reach the model server" in (caught.value.details() or "")

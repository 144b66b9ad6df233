"""The llama.cpp engine with the tests' real model (SmolLM2-135M-Instruct), over real gRPC."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import jsonschema
import pytest
import pytest_asyncio

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.llama_engine import LlamaCppEngine
from memex.reasoner.v1 import reasoner_pb2
from memex.testing.reasoner import Served, collect, served, user

# One model load for the module: its tests share the module's event loop and the server.
pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"enum": ["search_vault", "list_inbox"]},
                    "query": {"type": "string", "maxLength": 30},
                },
                "required": ["tool", "query"],
            },
        }
    },
    "required": ["steps"],
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def reasoner(model_path: Path) -> AsyncIterator[Served]:
    settings = ReasonerSettings(
        port=0, model_path=model_path, context_length=512, max_active=1, max_queue=4
    )
    async with served(settings) as running:
        yield running


async def text_of(reasoner: Served, request: reasoner_pb2.GenerateRequest) -> str:
    deltas, _ = await collect(reasoner.stub.Generate(request))
    return "".join(deltas)


async def test_info_describes_the_local_model(reasoner: Served) -> None:
    info = await reasoner.stub.Info(reasoner_pb2.InfoRequest())
    assert info.engine == "llama.cpp"
    assert info.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert (info.context_length, info.local) == (512, True)
    assert info.prefill_tokens_per_second > 0  # measured as the model loaded


async def test_a_reply_streams_with_usage_and_timings(reasoner: Served) -> None:
    deltas, final = await collect(
        reasoner.stub.Generate(user("Write one sentence about tea.", max_tokens=24, temperature=0))
    )
    assert "tea" in "".join(deltas).lower()
    assert len(deltas) > 1
    assert final.usage.prompt_tokens > 10
    assert 1 <= final.usage.completion_tokens <= 24
    assert final.finish_reason in (
        reasoner_pb2.FINISH_REASON_STOP,
        reasoner_pb2.FINISH_REASON_LENGTH,
    )
    assert 0 < final.time_to_first_token_ms < final.total_ms


async def test_max_tokens_ends_with_length_and_exact_usage(reasoner: Served) -> None:
    _, final = await collect(
        # A request no model answers in five tokens: with flash attention on, the tiny model
        # answers "Count from one to one hundred." with "One hundred.".
        reasoner.stub.Generate(
            user("Write a long story about a cat and a dog.", max_tokens=5, temperature=0)
        )
    )
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_LENGTH
    assert final.usage.completion_tokens == 5


async def test_the_same_seed_gives_the_same_text_and_the_cache_changes_nothing(
    reasoner: Served,
) -> None:
    ask = user("Write one sentence about tea.", max_tokens=12, temperature=1.0, seed=7)
    first = await text_of(reasoner, ask)
    await text_of(reasoner, user("Something else entirely.", max_tokens=4, temperature=0))
    assert await text_of(reasoner, ask) == first
    greedy = user("Name a colour.", max_tokens=8, temperature=0)
    assert await text_of(reasoner, greedy) == await text_of(reasoner, greedy)


async def test_stop_strings_cut_the_reply(reasoner: Served) -> None:
    full = await text_of(reasoner, user("Count: 1, 2, 3, 4, 5,", max_tokens=20, temperature=0))
    cut = full[: len(full) // 2].strip()[-2:]
    assert cut
    text = await text_of(
        reasoner, user("Count: 1, 2, 3, 4, 5,", max_tokens=20, temperature=0, stop=[cut])
    )
    assert cut not in text
    assert full.startswith(text)


async def test_a_json_schema_constrains_the_small_model_to_a_valid_plan(reasoner: Served) -> None:
    request = user(
        "Return a JSON plan with search steps to find notes about the dentist.",
        max_tokens=128,
        temperature=0,
    )
    request.json_schema = json.dumps(PLAN_SCHEMA)
    deltas, final = await collect(reasoner.stub.Generate(request))
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_STOP
    jsonschema.validate(json.loads("".join(deltas)), PLAN_SCHEMA)


async def test_a_prompt_longer_than_the_context_says_how_long(reasoner: Served) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(reasoner.stub.Generate(user("memex " * 600)))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "but the context holds 512" in (caught.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(reasoner.stub.Generate(user("memex " * 200, max_tokens=400)))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "and max_tokens is 400" in (caught.value.details() or "")


async def test_cancel_stops_within_a_step_and_frees_the_context(reasoner: Served) -> None:
    call = reasoner.stub.Generate(user("Tell me a very long story.", max_tokens=400))
    await call.read()
    cancelled = time.perf_counter()
    call.cancel()
    await asyncio.wait_for(reasoner.core.scheduler.idle.wait(), 5)
    freed = time.perf_counter() - cancelled
    engine = reasoner.core.engine
    assert isinstance(engine, LlamaCppEngine)
    assert engine._pool.qsize() == 1  # the context is back in the pool
    # A 400-token reply takes seconds on 2 cores; the slot came back within a decode step or so.
    assert freed < 0.5, f"slot freed {freed:.3f}s after cancel"


async def test_a_passed_deadline_stops_the_generation(reasoner: Served) -> None:
    # A free "long story" sometimes ended inside the deadline; a schema that needs hundreds of
    # tokens cannot.
    request = user("List the word memex many times.", max_tokens=400, temperature=0)
    request.json_schema = json.dumps(
        {"type": "array", "items": {"const": "memex"}, "minItems": 300}
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(reasoner.stub.Generate(request, timeout=0.5))
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    await asyncio.wait_for(reasoner.core.scheduler.idle.wait(), 5)

"""The reasoner over real gRPC on a free port, with the stub engine: contract, statuses,
queueing, cancellation and scripted replay. (The real engines have their own test files.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.core import ReasonerCore
from memex.reasoner.factory import open_core
from memex.reasoner.server import SERVICE
from memex.reasoner.servicer import ReasonerServicer
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared.server import EngineSlot, GrpcService
from memex.testing.reasoner import Served, collect, served, user


def stub_settings(**overrides: Any) -> ReasonerSettings:
    return ReasonerSettings(engine="stub", port=0, **overrides)


@pytest.fixture
async def stub_reasoner() -> AsyncIterator[Served]:
    async with served(stub_settings(max_queue=4)) as reasoner:
        yield reasoner


async def test_generate_streams_deltas_then_one_final(stub_reasoner: Served) -> None:
    deltas, final = await collect(stub_reasoner.stub.Generate(user("hello there")))
    text = "".join(deltas)
    assert text == "Stub reply (no model is configured). You said: hello there"
    assert len(deltas) > 3
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_STOP
    assert final.usage.completion_tokens == len(deltas)
    assert final.usage.prompt_tokens > 0
    assert final.model == "stub"
    assert 0 <= final.time_to_first_token_ms <= final.total_ms


async def test_max_tokens_and_stop_strings_end_the_stream(stub_reasoner: Served) -> None:
    deltas, final = await collect(stub_reasoner.stub.Generate(user("x", max_tokens=3)))
    assert (len(deltas), final.finish_reason) == (3, reasoner_pb2.FINISH_REASON_LENGTH)
    deltas, final = await collect(stub_reasoner.stub.Generate(user("x", stop=["model"])))
    assert "".join(deltas) == "Stub reply (no "
    assert final.finish_reason == reasoner_pb2.FINISH_REASON_STOP


async def test_info_says_what_the_engine_is(stub_reasoner: Served) -> None:
    info = await stub_reasoner.stub.Info(reasoner_pb2.InfoRequest())
    assert (info.engine, info.model, info.context_length, info.local) == (
        "stub",
        "stub",
        4096,
        True,
    )


async def test_structured_output_matches_the_schema(stub_reasoner: Served) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    request = user("plan")
    request.json_schema = json.dumps(schema)
    deltas, _ = await collect(stub_reasoner.stub.Generate(request))
    assert json.loads("".join(deltas)) == {"n": 0}


def _bad(request: reasoner_pb2.GenerateRequest, **changes: Any) -> reasoner_pb2.GenerateRequest:
    for name, value in changes.items():
        setattr(request, name, value)
    return request


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (reasoner_pb2.GenerateRequest(), "INVALID_ARGUMENT", "messages is empty"),
        (
            reasoner_pb2.GenerateRequest(messages=[reasoner_pb2.Message(content="hi")]),
            "INVALID_ARGUMENT",
            "messages[0].role is unspecified",
        ),
        (user("x", temperature=2.5), "INVALID_ARGUMENT", "sampling.temperature is 2.5"),
        (user("x", top_p=0.0), "INVALID_ARGUMENT", "sampling.top_p is 0; use a value above 0"),
        (user("x", max_tokens=-1), "INVALID_ARGUMENT", "sampling.max_tokens is -1"),
        (user("x", max_tokens=5000), "INVALID_ARGUMENT", "up to 4095"),
        (user("x", stop=["s"] * 9), "INVALID_ARGUMENT", "sampling.stop has 9 strings"),
        (user("x", stop=[""]), "INVALID_ARGUMENT", "sampling.stop[0] must be"),
        (_bad(user("x"), json_schema="{oops"), "INVALID_ARGUMENT", "json_schema is not valid JSON"),
        (_bad(user("x"), model="gpt-9"), "NOT_FOUND", "model 'gpt-9' is not served here"),
        (user("x" * 200_000), "INVALID_ARGUMENT", "cannot fit the context of 4096 tokens"),
    ],
)
async def test_bad_input_gets_a_clear_status(
    stub_reasoner: Served, request_: reasoner_pb2.GenerateRequest, code: str, message: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await collect(stub_reasoner.stub.Generate(request_))
    assert caught.value.code().name == code
    assert message in (caught.value.details() or "")


async def test_a_full_queue_gets_resource_exhausted() -> None:
    async with served(stub_settings(max_active=1, max_queue=1, stub_delay_ms=50)) as reasoner:
        first = reasoner.stub.Generate(user("slow"))
        await first.read()  # the first holds the slot; the second waits
        second = reasoner.stub.Generate(user("slow"))
        while reasoner.core.scheduler.queued < 1:  # noqa: ASYNC110 - a counter nobody signals
            await asyncio.sleep(0.005)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(reasoner.stub.Generate(user("one too many")))
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "the queue holds 1" in (caught.value.details() or "")
        _, final = await collect(second)
        assert final.queue_wait_ms > 100
        first.cancel()


async def test_client_cancel_stops_the_generation_and_frees_the_slot() -> None:
    async with served(stub_settings(max_active=1, stub_delay_ms=100)) as reasoner:
        call = reasoner.stub.Generate(user("a long reply"))
        await call.read()
        assert reasoner.core.scheduler.active == 1
        call.cancel()
        await asyncio.wait_for(reasoner.core.scheduler.idle.wait(), 2)
        # The freed slot serves the next caller straight away.
        _, final = await collect(reasoner.stub.Generate(user("next", max_tokens=1)))
        assert final.queue_wait_ms < 50


async def test_a_passed_deadline_stops_the_generation_and_frees_the_slot() -> None:
    async with served(stub_settings(max_active=1, stub_delay_ms=100)) as reasoner:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(reasoner.stub.Generate(user("slow"), timeout=0.25))
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await asyncio.wait_for(reasoner.core.scheduler.idle.wait(), 2)


async def test_a_script_is_replayed_with_its_chunk_boundaries(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {"match": "plan", "chunks": ['{"steps"', ": []}"]},
                    {"chunks": ["Answer @@CITA", "TIONS@@ [[Note]]"]},
                    {"chunks": ["half"], "error": {"status": "UNAVAILABLE", "after_chunks": 1}},
                ]
            }
        )
    )
    async with served(stub_settings(stub_script=script)) as reasoner:
        deltas, _ = await collect(reasoner.stub.Generate(user("please plan this")))
        assert deltas == ['{"steps"', ": []}"]
        deltas, final = await collect(reasoner.stub.Generate(user("answer")))
        assert deltas == ["Answer @@CITA", "TIONS@@ [[Note]]"]
        assert final.model == "stub-script"
        # Mid-stream error: the text so far arrives, then the status.
        call = reasoner.stub.Generate(user("answer again"))
        first = await call.read()
        assert isinstance(first, reasoner_pb2.GenerateResponse)
        assert first.delta == "half"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(call)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        # Unmatched responses go round in order.
        deltas, _ = await collect(reasoner.stub.Generate(user("and again")))
        assert deltas == ["Answer @@CITA", "TIONS@@ [[Note]]"]


async def test_health_is_not_serving_until_the_engine_is_loaded() -> None:
    settings = stub_settings()
    loaded = asyncio.Event()

    @contextlib.asynccontextmanager
    async def slow_load() -> AsyncIterator[ReasonerCore]:
        await loaded.wait()
        async with open_core(settings) as core:
            yield core

    def register(server: grpc.aio.Server, slot: EngineSlot[ReasonerCore]) -> None:
        reasoner_pb2_grpc.add_ReasonerServiceServicer_to_server(ReasonerServicer(slot), server)

    service = GrpcService(settings, [SERVICE], register, slow_load)
    task = asyncio.create_task(service.run(handle_signals=False))
    running = await asyncio.wait_for(service.started, 10)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        name = "memex.reasoner.v1.ReasonerService"
        reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await collect(reasoner_pb2_grpc.ReasonerServiceStub(channel).Generate(user("x")))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        loaded.set()
        await asyncio.wait_for(running.ready.wait(), 10)
        reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    running.stop()
    await asyncio.wait_for(task, 30)

"""The shared gRPC lifecycle against real in-process servers on port 0: health, reflection,
error mapping (unary and mid-stream), graceful drain, request ids and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared import errors
from memex.shared import server as server_module
from memex.shared.logs import request_id_var
from memex.shared.metrics import RPC_HANDLED
from memex.shared.server import EngineSlot, GrpcService
from memex.shared.settings import ServiceSettings
from memex.testing import serving

EMBEDDING = embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"]
REASONER = reasoner_pb2.DESCRIPTOR.services_by_name["ReasonerService"]


class Engine:
    """What the test servicers do, controlled by each test."""

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.release = asyncio.Event()
        self.release.set()
        self.seen_request_ids: list[str] = []
        self.endless = False


class Embedding(embedding_pb2_grpc.EmbeddingServiceServicer):
    def __init__(self, slot: EngineSlot[Engine]) -> None:
        self._slot = slot

    async def Embed(self, request: Any, context: Any) -> embedding_pb2.EmbedResponse:
        engine = self._slot.get()
        engine.seen_request_ids.append(request_id_var.get())
        logging.getLogger("test.embed").info("embedding")
        await engine.release.wait()
        if engine.error is not None:
            raise engine.error
        return embedding_pb2.EmbedResponse(model_id="test", dimension=len(request.texts))

    async def Info(self, request: Any, context: Any) -> embedding_pb2.InfoResponse:
        return embedding_pb2.InfoResponse()


class Reasoner(reasoner_pb2_grpc.ReasonerServiceServicer):
    def __init__(self, slot: EngineSlot[Engine]) -> None:
        self._slot = slot

    async def Generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        engine = self._slot.get()
        yield reasoner_pb2.GenerateResponse(delta="one ")
        yield reasoner_pb2.GenerateResponse(delta="two ")
        while engine.endless:
            yield reasoner_pb2.GenerateResponse(delta="more ")
        if engine.error is not None:
            raise engine.error
        yield reasoner_pb2.GenerateResponse(final=reasoner_pb2.GenerateFinal())

    async def Info(self, request: Any, context: Any) -> reasoner_pb2.InfoResponse:
        return reasoner_pb2.InfoResponse()


def make_service(engine: Engine, loaded: asyncio.Event | None = None) -> GrpcService[Engine]:
    def register(server: grpc.aio.Server, slot: EngineSlot[Engine]) -> None:
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(Embedding(slot), server)
        reasoner_pb2_grpc.add_ReasonerServiceServicer_to_server(Reasoner(slot), server)

    @contextlib.asynccontextmanager
    async def load() -> AsyncIterator[Engine]:
        if loaded is not None:
            await loaded.wait()
        yield engine

    settings = ServiceSettings(port=0, grace_seconds=5)
    return GrpcService(settings, [EMBEDDING, REASONER], register, load)


@contextlib.asynccontextmanager
async def client(port: int) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield channel


async def health_of(channel: grpc.aio.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service))
    return int(reply.status)


async def test_health_is_not_serving_until_the_engine_loads() -> None:
    loaded = asyncio.Event()
    async with (
        serving(make_service(Engine(), loaded), ready=False) as running,
        client(running.port) as ch,
    ):
        name = EMBEDDING.full_name
        assert await health_of(ch, name) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert await health_of(ch, "") == health_pb2.HealthCheckResponse.NOT_SERVING
        stub = embedding_pb2_grpc.EmbeddingServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Embed(embedding_pb2.EmbedRequest(texts=["x"]))
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        loaded.set()
        await asyncio.wait_for(running.ready.wait(), 5)
        assert await health_of(ch, name) == health_pb2.HealthCheckResponse.SERVING
        assert (await stub.Embed(embedding_pb2.EmbedRequest(texts=["x"]))).model_id == "test"


async def test_reflection_lists_every_service() -> None:
    async with serving(make_service(Engine())) as running, client(running.port) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        async for reply in stub.ServerReflectionInfo(iter([request])):
            names = {s.name for s in reply.list_services_response.service}
            break
    assert {EMBEDDING.full_name, REASONER.full_name, "grpc.health.v1.Health"} <= names


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.InvalidArgument("texts is empty"), grpc.StatusCode.INVALID_ARGUMENT),
        (errors.NotFound("no such conversation"), grpc.StatusCode.NOT_FOUND),
        (errors.ResourceExhausted("queue full"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (errors.Unavailable("peer down"), grpc.StatusCode.UNAVAILABLE),
        (errors.PermissionDenied("not allowed"), grpc.StatusCode.PERMISSION_DENIED),
    ],
)
async def test_domain_errors_map_to_their_status(error: Exception, code: grpc.StatusCode) -> None:
    engine = Engine()
    engine.error = error
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await embedding_pb2_grpc.EmbeddingServiceStub(ch).Embed(embedding_pb2.EmbedRequest())
    assert info.value.code() == code
    assert info.value.details() == str(error)


async def test_unknown_errors_become_internal_without_leaking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = Engine()
    engine.error = RuntimeError("secret path /home/alice/.ssh/id_rsa")
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await embedding_pb2_grpc.EmbeddingServiceStub(ch).Embed(embedding_pb2.EmbedRequest())
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in (info.value.details() or "")
    assert "request id" in (info.value.details() or "")
    assert any("secret path" in r.getMessage() or r.exc_info for r in caplog.records)


def sqlite_full_error() -> sqlite3.Error:
    """The error SQLite really raises when its file cannot grow (a page limit stands in for
    the disk)."""
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA max_page_count = 2")
    db.execute("CREATE TABLE t (x BLOB)")
    try:
        for _ in range(100):
            db.execute("INSERT INTO t VALUES (zeroblob(4096))")
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("SQLite never filled up")


@pytest.mark.parametrize(
    "error",
    [OSError(errno.ENOSPC, "No space left on device"), sqlite_full_error()],
    ids=["ENOSPC", "SQLITE_FULL"],
)
async def test_a_full_disk_is_resource_exhausted_saying_so(error: Exception) -> None:
    engine = Engine()
    engine.error = error
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await embedding_pb2_grpc.EmbeddingServiceStub(ch).Embed(embedding_pb2.EmbedRequest())
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "disk holding memex's data is full" in (info.value.details() or "")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.InvalidArgument("prompt too long"), grpc.StatusCode.INVALID_ARGUMENT),
        (ValueError("boom"), grpc.StatusCode.INTERNAL),
    ],
)
async def test_errors_raised_mid_stream_keep_the_messages_sent(
    error: Exception, code: grpc.StatusCode
) -> None:
    engine = Engine()
    engine.error = error
    received: list[str] = []
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        call = reasoner_pb2_grpc.ReasonerServiceStub(ch).Generate(reasoner_pb2.GenerateRequest())
        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for message in call:
                received.append(message.delta)
    assert received == ["one ", "two "]
    assert info.value.code() == code
    assert "boom" not in (info.value.details() or "")


async def test_sigterm_drains_calls_in_flight() -> None:
    engine = Engine()
    engine.release.clear()
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(ch)
        in_flight = asyncio.ensure_future(stub.Embed(embedding_pb2.EmbedRequest(texts=["a", "b"])))
        await asyncio.sleep(0.2)
        running.stop()  # what the SIGTERM handler does
        await asyncio.sleep(0.2)
        assert not in_flight.done()
        engine.release.set()
        reply = await asyncio.wait_for(in_flight, 5)
    assert reply.dimension == 2


async def test_request_id_travels_from_metadata_to_logs(caplog: pytest.LogCaptureFixture) -> None:
    engine = Engine()
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(ch)
        await stub.Embed(embedding_pb2.EmbedRequest(), metadata=[("x-request-id", "req-42")])
        await stub.Embed(embedding_pb2.EmbedRequest())
    assert engine.seen_request_ids[0] == "req-42"
    assert len(engine.seen_request_ids[1]) == 32  # generated when the caller sent none


async def test_every_call_is_counted_by_status() -> None:
    engine = Engine()
    method = f"/{EMBEDDING.full_name}/Embed"
    before = RPC_HANDLED.labels(method, "NOT_FOUND")._value.get()
    engine.error = errors.NotFound("x")
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        with pytest.raises(grpc.aio.AioRpcError):
            await embedding_pb2_grpc.EmbeddingServiceStub(ch).Embed(embedding_pb2.EmbedRequest())
    assert RPC_HANDLED.labels(method, "NOT_FOUND")._value.get() == before + 1


async def test_a_stream_the_caller_leaves_is_counted_cancelled() -> None:
    # Sending as fast as it can, the handler is usually mid-send when the caller leaves; grpc then
    # closes the stream rather than cancelling the task, and that must not count as finished.
    engine = Engine()
    engine.endless = True
    method = f"/{REASONER.full_name}/Generate"
    finished = RPC_HANDLED.labels(method, "OK")._value.get()
    cancelled = RPC_HANDLED.labels(method, "CANCELLED")._value.get()
    async with serving(make_service(engine)) as running, client(running.port) as ch:
        stub = reasoner_pb2_grpc.ReasonerServiceStub(ch)
        for _ in range(10):
            call = stub.Generate(reasoner_pb2.GenerateRequest())
            for _ in range(5):
                await call.read()
            call.cancel()
        deadline = asyncio.get_running_loop().time() + 5
        while RPC_HANDLED.labels(method, "CANCELLED")._value.get() < cancelled + 10:
            assert asyncio.get_running_loop().time() < deadline, "not every call was counted"
            await asyncio.sleep(0.05)
    assert RPC_HANDLED.labels(method, "OK")._value.get() == finished


async def test_an_idle_channel_pinging_its_server_stays_connected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # memex's channels ping every KEEPALIVE_TIME_MS, with or without calls. gRPC's default server
    # takes the third ping within 5 minutes as abuse and sends GOAWAY "too_many_pings", which ends
    # any call that is starting then (an ask failed so in CI). Scaled down: pings every 10 s
    # (the least a client sends) against a server that accepts one every 5 s.
    monkeypatch.setattr(server_module, "MIN_PING_INTERVAL_MS", 5_000)
    engine = Engine()
    async with (
        serving(make_service(engine)) as running,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{running.port}",
            options=[
                ("grpc.keepalive_time_ms", 10_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.max_pings_without_data", 0),
            ],
        ) as ch,
    ):
        stub = embedding_pb2_grpc.EmbeddingServiceStub(ch)
        await stub.Embed(embedding_pb2.EmbedRequest(texts=["a"]))
        await asyncio.sleep(35)  # three pings on an idle connection
        assert ch.get_state() == grpc.ChannelConnectivity.READY

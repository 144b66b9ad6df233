"""Outbound channels: retries on UNAVAILABLE for idempotent methods only, deadlines taken from
the caller's budget, and the request id carried to the peer."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.shared import errors
from memex.shared.client import KEEPALIVE_TIME_MS, open_channel
from memex.shared.interceptors import deadline_var
from memex.shared.logs import request_id_var
from memex.shared.server import MIN_PING_INTERVAL_MS, EngineSlot, GrpcService
from memex.shared.settings import ServiceSettings
from memex.testing import serving

SERVICE = embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"]


class Flaky(embedding_pb2_grpc.EmbeddingServiceServicer):
    """Fails the first ``failures`` calls with UNAVAILABLE; records what each call saw."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.time_remaining: list[float | None] = []
        self.request_ids: list[str] = []

    async def Embed(self, request: Any, context: Any) -> embedding_pb2.EmbedResponse:
        self.calls += 1
        self.time_remaining.append(context.time_remaining())
        self.request_ids.append(request_id_var.get())
        if self.calls <= self.failures:
            raise errors.Unavailable("warming up")
        return embedding_pb2.EmbedResponse(model_id="ok")

    async def Info(self, request: Any, context: Any) -> embedding_pb2.InfoResponse:
        self.calls += 1
        raise errors.Unavailable("warming up")


@contextlib.asynccontextmanager
async def flaky_server(servicer: Flaky) -> AsyncIterator[int]:
    def register(server: grpc.aio.Server, slot: EngineSlot[None]) -> None:
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(servicer, server)

    @contextlib.asynccontextmanager
    async def load() -> AsyncIterator[None]:
        yield None

    service = GrpcService(ServiceSettings(port=0), [SERVICE], register, load)
    async with serving(service) as running:
        yield running.port


async def test_idempotent_calls_are_retried_on_unavailable() -> None:
    servicer = Flaky(failures=2)
    async with flaky_server(servicer) as port:
        channel = open_channel(
            f"127.0.0.1:{port}", service=SERVICE.full_name, idempotent_methods=["Embed"]
        )
        async with channel:
            reply = await embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(
                embedding_pb2.EmbedRequest()
            )
    assert reply.model_id == "ok"
    assert servicer.calls == 3


async def test_other_calls_are_not_retried() -> None:
    servicer = Flaky(failures=0)
    async with flaky_server(servicer) as port:
        channel = open_channel(
            f"127.0.0.1:{port}", service=SERVICE.full_name, idempotent_methods=["Embed"]
        )
        async with channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await embedding_pb2_grpc.EmbeddingServiceStub(channel).Info(
                    embedding_pb2.InfoRequest()
                )
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert servicer.calls == 1


async def test_every_call_gets_a_deadline_within_the_callers_budget() -> None:
    servicer = Flaky(failures=0)
    async with (
        flaky_server(servicer) as port,
        open_channel(f"127.0.0.1:{port}", default_timeout=20) as channel,
    ):
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        await stub.Embed(embedding_pb2.EmbedRequest())
        token = deadline_var.set(time.monotonic() + 2.0)  # as if serving a call with 2 s left
        request_token = request_id_var.set("caller-7")
        try:
            await stub.Embed(embedding_pb2.EmbedRequest())
        finally:
            deadline_var.reset(token)
            request_id_var.reset(request_token)
    default, budgeted = servicer.time_remaining
    # grpc-timeout is sent rounded to its wire units, so the server may see a hair over 20 s.
    assert default is not None and 15 < default <= 20.5
    assert budgeted is not None and budgeted <= 2.1  # not the 20 s default
    assert servicer.request_ids[1] == "caller-7"


async def test_a_server_that_is_gone_gives_unavailable() -> None:
    async with open_channel("127.0.0.1:1", default_timeout=5) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(
                embedding_pb2.EmbedRequest()
            )
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_servers_accept_the_pings_memex_channels_send() -> None:
    # A server that takes a client's idle pings as abuse answers with GOAWAY "too_many_pings"
    # and the call starting then fails (seen in `make demo` after 90 s of idle channel).
    assert KEEPALIVE_TIME_MS >= MIN_PING_INTERVAL_MS

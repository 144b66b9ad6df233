"""Authentication between services: a shared token or mTLS, refused without the credential."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from pydantic import ValidationError

from memex.embedding.v1 import embedding_pb2, embedding_pb2_grpc
from memex.reasoner.v1 import reasoner_pb2, reasoner_pb2_grpc
from memex.shared import certs, health
from memex.shared.client import open_channel
from memex.shared.errors import InvalidArgument
from memex.shared.logs import request_id_var
from memex.shared.server import EngineSlot, GrpcService
from memex.shared.settings import InternalAuthSettings, ServiceSettings
from memex.testing import serving

SERVICE = embedding_pb2.DESCRIPTOR.services_by_name["EmbeddingService"]
TOKEN = "t" * 40


class Streamer(reasoner_pb2_grpc.ReasonerServiceServicer):
    """Records what a server-streaming call arrived with."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float | None]] = []

    async def Generate(self, request: Any, context: Any) -> AsyncIterator[Any]:
        self.seen.append((request_id_var.get(), context.time_remaining()))
        yield reasoner_pb2.GenerateResponse()

    async def Info(self, request: Any, context: Any) -> reasoner_pb2.InfoResponse:
        return reasoner_pb2.InfoResponse()


class Echo(embedding_pb2_grpc.EmbeddingServiceServicer):
    async def Embed(self, request: Any, context: Any) -> embedding_pb2.EmbedResponse:
        return embedding_pb2.EmbedResponse(model_id="ok")

    async def Info(self, request: Any, context: Any) -> embedding_pb2.InfoResponse:
        return embedding_pb2.InfoResponse()


@contextlib.asynccontextmanager
async def server(auth: InternalAuthSettings) -> AsyncIterator[str]:
    def register(server: grpc.aio.Server, slot: EngineSlot[None]) -> None:
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(Echo(), server)

    @contextlib.asynccontextmanager
    async def load() -> AsyncIterator[None]:
        yield None

    service = GrpcService(ServiceSettings(port=0), [SERVICE], register, load, auth=auth)
    async with serving(service) as running:
        yield f"127.0.0.1:{running.port}"


async def embed(address: str, auth: InternalAuthSettings) -> str:
    async with open_channel(address, default_timeout=5, auth=auth) as channel:
        reply = await embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(
            embedding_pb2.EmbedRequest()
        )
    return str(reply.model_id)


def token_auth(token: str = TOKEN) -> InternalAuthSettings:
    return InternalAuthSettings(auth="token", token=token)


def mtls_auth(folder: Path) -> InternalAuthSettings:
    return InternalAuthSettings(auth="mtls", tls_dir=folder)


NONE = InternalAuthSettings(auth="none")


async def test_token_calls_with_the_token_pass_and_others_are_refused() -> None:
    async with server(token_auth()) as address:
        assert await embed(address, token_auth()) == "ok"
        for caller in (NONE, token_auth("w" * 40)):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await embed(address, caller)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "MEMEX_INTERNAL_TOKEN" in str(info.value.details())
        async with open_channel(address, default_timeout=5, auth=NONE) as channel:
            stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")])
            )
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stream.read()
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED  # streams too
        # Kubernetes' gRPC probe sends no credentials; health says only SERVING or not.
        assert await health.check(address, auth=NONE) == "SERVING"


async def test_a_streaming_call_carries_the_token_the_request_id_and_a_deadline() -> None:
    # grpc.aio files a client interceptor under one call kind only; streams once went without.
    streamer = Streamer()

    def register(server: grpc.aio.Server, slot: EngineSlot[None]) -> None:
        reasoner_pb2_grpc.add_ReasonerServiceServicer_to_server(streamer, server)

    @contextlib.asynccontextmanager
    async def load() -> AsyncIterator[None]:
        yield None

    descriptor = reasoner_pb2.DESCRIPTOR.services_by_name["ReasonerService"]
    service = GrpcService(ServiceSettings(port=0), [descriptor], register, load, auth=token_auth())
    async with serving(service) as running:
        address = f"127.0.0.1:{running.port}"
        async with open_channel(address, default_timeout=20, auth=token_auth()) as channel:
            token = request_id_var.set("stream-7")
            try:
                stub = reasoner_pb2_grpc.ReasonerServiceStub(channel)
                replies = [r async for r in stub.Generate(reasoner_pb2.GenerateRequest())]
            finally:
                request_id_var.reset(token)
    assert len(replies) == 1
    [(request_id, remaining)] = streamer.seen
    assert request_id == "stream-7"
    assert remaining is not None and remaining <= 20.5


@pytest.fixture(scope="module")
def issued(tmp_path_factory: pytest.TempPathFactory) -> certs.Issued:
    return certs.issue(tmp_path_factory.mktemp("certs"), ["embedding", "orchestrator"])


async def test_mtls_needs_a_certificate_from_the_deployment_ca(
    issued: certs.Issued, tmp_path: Path
) -> None:
    other_ca = certs.issue(tmp_path / "other", ["orchestrator"])
    async with server(mtls_auth(issued.service_dirs["embedding"])) as address:
        assert await embed(address, mtls_auth(issued.service_dirs["orchestrator"])) == "ok"
        assert await health.check(address, auth=mtls_auth(issued.service_dirs["orchestrator"])) == (
            "SERVING"
        )
        # Plaintext, and a certificate another CA signed, never get as far as a call.
        for caller in (NONE, mtls_auth(other_ca.service_dirs["orchestrator"])):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await embed(address, caller)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert await health.check(address, auth=NONE) == "UNREACHABLE"


async def test_mtls_refuses_a_client_without_a_certificate(issued: certs.Issued) -> None:
    folder = issued.service_dirs["embedding"]
    async with server(mtls_auth(folder)) as address:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=(folder / "ca.crt").read_bytes()
        )
        async with grpc.aio.secure_channel(address, credentials) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(
                    embedding_pb2.EmbedRequest(), timeout=5
                )
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_missing_credential_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="at least 32 characters"):
        InternalAuthSettings(auth="token", token="short")
    with pytest.raises(ValidationError, match="needs MEMEX_INTERNAL_TLS_DIR"):
        InternalAuthSettings(auth="mtls")
    with pytest.raises(ValidationError, match=r"lacks tls\.crt, tls\.key, ca\.crt"):
        InternalAuthSettings(auth="mtls", tls_dir=tmp_path)


def test_certs_reuse_the_ca_and_keep_keys_private(issued: certs.Issued) -> None:
    again = certs.issue(issued.ca_cert.parent, ["worker"])
    assert again.ca_reused and not issued.ca_reused
    assert again.ca_cert.read_bytes() == issued.ca_cert.read_bytes()
    key = again.service_dirs["worker"] / "tls.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert (issued.ca_cert.parent / "ca.key").stat().st_mode & 0o777 == 0o600


def test_certs_refuse_a_bad_service_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="lower-case"):
        certs.issue(tmp_path, ["Not A Name"])

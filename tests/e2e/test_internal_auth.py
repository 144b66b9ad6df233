"""The shared demo stack runs with MEMEX_INTERNAL_AUTH=mtls: its services answer only peers that
present a certificate from the deployment's CA."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from memex.orchestrator.v1 import orchestrator_pb2, orchestrator_pb2_grpc
from memex.shared import health
from memex.shared.client import open_channel
from memex.shared.settings import InternalAuthSettings

from .conftest import DemoStack

PLAINTEXT = InternalAuthSettings(auth="none")
SERVICES = ("EMBEDDING", "RETRIEVAL", "REASONER", "ORCHESTRATOR")


def stack_auth(stack: DemoStack) -> InternalAuthSettings:
    return InternalAuthSettings(auth="mtls", tls_dir=Path(stack.env["MEMEX_INTERNAL_TLS_DIR"]))


async def test_every_service_refuses_a_peer_without_the_deployments_certificate(
    demo_stack: DemoStack,
) -> None:
    for name in SERVICES:
        address = f"127.0.0.1:{demo_stack.env[f'MEMEX_{name}_PORT']}"
        assert await health.check(address, auth=stack_auth(demo_stack)) == "SERVING", name
        assert await health.check(address, auth=PLAINTEXT) == "UNREACHABLE", name


async def test_a_call_with_the_certificate_is_answered_and_one_without_is_not(
    demo_stack: DemoStack,
) -> None:
    address = f"127.0.0.1:{demo_stack.env['MEMEX_ORCHESTRATOR_PORT']}"
    request = orchestrator_pb2.SearchRequest(query="deposit", k=3)
    async with open_channel(address, default_timeout=60, auth=stack_auth(demo_stack)) as channel:
        reply = await orchestrator_pb2_grpc.OrchestratorServiceStub(channel).Search(request)
    assert reply.items
    async with open_channel(address, default_timeout=10, auth=PLAINTEXT) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await orchestrator_pb2_grpc.OrchestratorServiceStub(channel).Search(request)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE

"""A chat cancelled mid-stream on the real stack (SPEC B7, B11): the reasoner stops generating,
the orchestrator stays healthy, and the conversation keeps the question with no half reply.
Real processes, the real embedding model and the real default llama.cpp model."""

from __future__ import annotations

import asyncio
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.reasoner.catalogue import tiny_model_path
from memex.shared.health import check
from memex.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GENERATE = "/memex.reasoner.v1.ReasonerService/Generate"


def run(
    command: list[str], env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def sample(port: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples on a service's /metrics that carry ``labels``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        families = text_string_to_metric_families(reply.read().decode())
    return sum(
        s.value
        for family in families
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


async def next_reply(call: Any) -> pb.ChatResponse:
    reply = await call.read()
    assert isinstance(reply, pb.ChatResponse), "the stream ended early"
    return reply


async def test_a_chat_cancelled_after_its_first_delta_stops_the_model(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    require(tiny_model_path(), "run `make models`")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Allotment.md").write_text(
        "---\ntitle: Allotment\n---\nPlot 23B costs £48 a year. Beans, leeks and dahlias.\n"
    )
    up = run(memex_cli, stack_env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert run(memex_cli, stack_env, "index", str(vault)).returncode == 0
    reasoner_metrics = stack_env["MEMEX_REASONER_METRICS_PORT"]
    orchestrator_metrics = stack_env["MEMEX_ORCHESTRATOR_METRICS_PORT"]
    address = f"127.0.0.1:{stack_env['MEMEX_ORCHESTRATOR_PORT']}"

    async with grpc.aio.insecure_channel(address) as channel:
        stub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
        call = stub.Chat(
            pb.ChatRequest(
                message="Tell me everything about the allotment, in a long and detailed essay "
                "of many paragraphs."
            )
        )
        meta = await next_reply(call)
        assert meta.HasField("meta")
        delta = await next_reply(call)
        assert delta.HasField("delta"), delta
        assert sample(reasoner_metrics, "memex_reasoner_active_streams") == 1
        call.cancel()

        # The reasoner's Generate call ends CANCELLED (not OK: it did not run to its end) and
        # no generation is left running.
        for _ in range(100):
            if sample(
                reasoner_metrics,
                "memex_grpc_server_handled_total",
                method=GENERATE,
                code="CANCELLED",
            ):
                break
            await asyncio.sleep(0.1)
        assert (
            sample(
                reasoner_metrics,
                "memex_grpc_server_handled_total",
                method=GENERATE,
                code="CANCELLED",
            )
            == 1
        )
        assert sample(reasoner_metrics, "memex_reasoner_active_streams") == 0

        # The orchestrator is healthy and consistent: the question kept, no half reply stored,
        # the audited call marked cancelled.
        assert await check(address, "memex.orchestrator.v1.OrchestratorService") == "SERVING"
        assert (
            sample(orchestrator_metrics, "memex_orchestrator_chats_total", outcome="cancelled") == 1
        )
        conversation = await stub.GetConversation(
            pb.GetConversationRequest(conversation_id=meta.meta.conversation_id)
        )
        assert [m.role for m in conversation.messages] == [pb.MESSAGE_ROLE_USER]
        assert conversation.messages[0].text.startswith("Tell me everything about the allotment")

        # And the same conversation goes on: a next message gets a whole reply.
        events = [
            event
            async for event in stub.Chat(
                pb.ChatRequest(
                    conversation_id=meta.meta.conversation_id, message="How much does it cost?"
                )
            )
        ]
        assert events[-1].HasField("done"), events[-1]
        conversation = await stub.GetConversation(
            pb.GetConversationRequest(conversation_id=meta.meta.conversation_id)
        )
        assert [m.role for m in conversation.messages] == [
            pb.MESSAGE_ROLE_USER,
            pb.MESSAGE_ROLE_USER,
            pb.MESSAGE_ROLE_ASSISTANT,
        ]

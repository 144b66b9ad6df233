"""ListPersonas over gRPC (the built-ins and a user's own persona), and how a chat stream fails."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared import errors

from .fakes import NOTES, FakeMemory, ScriptedReasoner, make_orchestrator, serving


@pytest.fixture
async def stub(tmp_path: Path) -> AsyncIterator[Any]:
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "historian.toml").write_text(
        'name = "historian"\ndescription = "Dates first."\ndefault_for = ["chat"]\n'
        'chunks = 15\nchannels = ["vector", "observations"]\nsystem_prompt = "Dates first."\n'
    )
    orchestrator = make_orchestrator(tmp_path, ScriptedReasoner({}), FakeMemory(NOTES))
    async with serving(orchestrator) as stub:
        yield stub


async def test_list_personas_has_the_built_ins_and_the_users_own(stub: Any) -> None:
    reply = await stub.ListPersonas(pb.ListPersonasRequest())
    names = [p.name for p in reply.personas]
    assert names == ["analyst", "coach", "friend", "historian", "skeptic"]
    assert (reply.default_ask, reply.default_chat) == ("analyst", "historian")
    by_name = {p.name: p for p in reply.personas}
    historian, analyst = by_name["historian"], by_name["analyst"]
    assert historian.default_for_chat and not historian.default_for_ask
    assert analyst.default_for_ask and not analyst.default_for_chat
    # The built-in chat default gave way to the user's: only one persona is marked per purpose.
    assert [p.name for p in reply.personas if p.default_for_chat] == ["historian"]
    assert historian.description == "Dates first." and historian.chunks == 15
    assert list(historian.channels) == [common_pb2.CHANNEL_VECTOR, common_pb2.CHANNEL_OBSERVATIONS]
    assert list(analyst.stages) == ["plan", "retrieve", "synthesize", "ground_check"]
    assert analyst.model_calls == 2 and analyst.system_prompt


async def test_a_chat_that_fails_after_its_first_event_ends_with_the_status(
    tmp_path: Path,
) -> None:
    """Issue 38: one convention for a failure in a stream, chat's as AskStream's: the events
    sent stay sent, and the call ends with the failure's gRPC status and message."""

    def fail(_: object) -> None:
        raise errors.Unavailable("retrieval is down")

    memory = FakeMemory(NOTES, on_search=fail)
    orchestrator = make_orchestrator(tmp_path, ScriptedReasoner({}), memory)
    async with serving(orchestrator) as stub:
        call = stub.Chat(pb.ChatRequest(message="hi"))
        first = await call.read()
        assert first.WhichOneof("event") == "meta"
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call.read()
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert failed.value.details() == "retrieval is down"

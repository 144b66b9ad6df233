"""ListPersonas over gRPC (the built-ins and a user's own persona), and ChatError's enum code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from memex.common.v1 import common_pb2
from memex.orchestrator.servicer import chat_error_code
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared import errors
from memex.shared.grpc_errors import STATUS_BY_ERROR

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


def test_chat_error_codes_are_the_grpc_status_codes_by_name_and_number() -> None:
    for code in grpc.StatusCode:
        if code is grpc.StatusCode.OK:
            continue
        value = pb.ChatErrorCode.Value(f"CHAT_ERROR_CODE_{code.name}")
        assert value == code.value[0], code
    for error, code in STATUS_BY_ERROR.items():
        assert pb.ChatErrorCode.Name(chat_error_code(error("x"))) == f"CHAT_ERROR_CODE_{code.name}"
    # A domain error with no status of its own is INTERNAL.
    assert chat_error_code(errors.MemexError("x")) == pb.CHAT_ERROR_CODE_INTERNAL

"""The API's answer models mirror the orchestrator's contract field for field, so a field added to
the proto and forgotten here (or the reverse) fails a test, not a client."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message
from pydantic import BaseModel

from memex.common.v1 import common_pb2
from memex.gateway import present
from memex.gateway.models import ask, chat
from memex.orchestrator.v1 import orchestrator_pb2 as pb

# What the API adds of its own to what the proto carries, each with why.
ADDED: dict[type[BaseModel], set[str]] = {
    # support as a word a person reads, from the proto's enum
    present.Citation: {"support_label"},
}


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (ask.AskResponse, pb.AskResponse),
        (ask.AskStarted, pb.AskStarted),
        (ask.AskRedraft, pb.AskRedraft),
        (ask.Grounding, pb.GroundingReport),
        (ask.CheckedSpecific, pb.CheckedSpecific),
        (present.Citation, common_pb2.Citation),
        (chat.ChatMeta, pb.ChatMeta),
        (chat.ChatCitations, pb.ChatCitations),
        (chat.ChatDone, pb.ChatDone),
    ],
)
def test_an_api_model_has_its_messages_fields(
    model: type[BaseModel], message: type[Message]
) -> None:
    fields = {f.name for f in message.DESCRIPTOR.fields}
    assert set(model.model_fields) - ADDED.get(model, set()) == fields

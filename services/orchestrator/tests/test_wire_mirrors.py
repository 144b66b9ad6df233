"""What ``wire/answers_pb.py`` translates: the domain's answer types and the contract carry the same
fields, but for what each keeps to itself (said here with why), so a field added on one side and
forgotten on the other fails here."""

from __future__ import annotations

import dataclasses

import pytest
from google.protobuf.message import Message

from memex.common.v1 import common_pb2
from memex.orchestrator.ask.events import AskResult, Started
from memex.orchestrator.memory.items import CheckedSpecific, Citation, GroundingReport
from memex.orchestrator.v1 import orchestrator_pb2 as pb

# The domain's own: kept by the orchestrator (telemetry, metrics), not sent.
KEPT: dict[type, set[str]] = {AskResult: {"dropped_steps", "abstain_reason"}}
# The contract's own: computed from the domain's fields when translated.
COMPUTED: dict[type, set[str]] = {GroundingReport: {"score"}}


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        (AskResult, pb.AskResponse),
        (Started, pb.AskStarted),
        (Citation, common_pb2.Citation),
        (GroundingReport, pb.GroundingReport),
        (CheckedSpecific, pb.CheckedSpecific),
    ],
)
def test_a_domain_type_and_its_message_carry_the_same_fields(
    domain: type, message: type[Message]
) -> None:
    fields = {f.name for f in dataclasses.fields(domain)} - KEPT.get(domain, set())
    assert fields | COMPUTED.get(domain, set()) == {f.name for f in message.DESCRIPTOR.fields}

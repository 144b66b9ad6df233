"""The belief RPCs of the fake orchestrator (issue 37): one derived belief and one of the vault's,
in memory, with the real service's errors, so the gateway's routes and the spec's property tests
have something to read and refuse."""

from __future__ import annotations

from typing import Any

import grpc

from memex.common.v1 import common_pb2
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.errors import FailedPrecondition, InvalidArgument, NotFound

Context = grpc.aio.ServicerContext[Any, Any]


def _beliefs() -> dict[str, pb.Belief]:
    quote = pb.BeliefEvidence(
        episode_id="ep1", title="Long run", date="2026-08-23",
        quote="Morning runs feel easier", support=common_pb2.SUPPORT_VERBATIM,
    )  # fmt: skip
    return {
        "reflect-1": pb.Belief(
            id="reflect-1", statement="Mornings suit her runs.", status="active",
            confidence=0.7, evidence=[quote], date="2026-12-01", model="fake", derived=True,
        ),
        "belief-vault": pb.Belief(
            id="belief-vault", statement="Three runs a week.", status="active", confidence=0.7,
        ),
    }  # fmt: skip


class FakeBeliefs:
    """Reflect, ListBeliefs, ReviewBelief and ForgetBelief over an in-memory collection."""

    def __init__(self) -> None:
        super().__init__()
        self.beliefs = _beliefs()

    def _derived(self, belief_id: str) -> pb.Belief:
        if not belief_id:
            raise InvalidArgument("id is empty")
        if belief_id not in self.beliefs:
            raise NotFound(f"no belief with id {belief_id!r}")
        if not self.beliefs[belief_id].derived:
            raise FailedPrecondition("edit records/beliefs.jsonl")
        return self.beliefs[belief_id]

    async def Reflect(self, request: pb.ReflectRequest, context: Context) -> pb.ReflectResponse:
        if request.max_episodes < 0 or request.max_episodes > 200:
            raise InvalidArgument("max_episodes must be between 0 and 200")
        made = self.beliefs["reflect-1"]
        return pb.ReflectResponse(
            episodes_read=1, model_calls=1, proposed=1, beliefs=[made], quotes=1, quotes_verbatim=1
        )

    async def ListBeliefs(
        self, request: pb.ListBeliefsRequest, context: Context
    ) -> pb.ListBeliefsResponse:
        return pb.ListBeliefsResponse(
            beliefs=[
                b
                for b in self.beliefs.values()
                if request.include_rejected or b.status != "rejected"
            ]
        )

    async def ReviewBelief(
        self, request: pb.ReviewBeliefRequest, context: Context
    ) -> pb.ReviewBeliefResponse:
        belief = self._derived(request.id)
        if request.verdict == pb.BELIEF_VERDICT_UNSPECIFIED:
            raise InvalidArgument("verdict must be confirm or reject")
        belief.status = "active" if request.verdict == pb.BELIEF_VERDICT_CONFIRM else "rejected"
        belief.confirmed = request.verdict == pb.BELIEF_VERDICT_CONFIRM
        return pb.ReviewBeliefResponse(belief=belief)

    async def ForgetBelief(
        self, request: pb.ForgetBeliefRequest, context: Context
    ) -> pb.ForgetBeliefResponse:
        self._derived(request.id)
        del self.beliefs[request.id]
        return pb.ForgetBeliefResponse(deleted=1)

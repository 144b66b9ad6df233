"""Proto ⇄ domain translation for the learning loop's RPCs (issue 37): Reflect, ListBeliefs,
ReviewBelief, ForgetBelief. ``OrchestratorServicer`` takes them from this mixin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from memex.common.v1 import common_pb2
from memex.orchestrator.learning.beliefs import Belief, Evidence
from memex.orchestrator.service import Orchestrator
from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.shared.server import EngineSlot

Context = grpc.aio.ServicerContext[Any, Any]

_SUPPORT = {
    "verbatim": common_pb2.SUPPORT_VERBATIM,
    "paraphrase": common_pb2.SUPPORT_PARAPHRASE,
}
_VERDICTS = {pb.BELIEF_VERDICT_CONFIRM: "confirm", pb.BELIEF_VERDICT_REJECT: "reject"}


def _evidence(quotes: Sequence[Evidence]) -> list[pb.BeliefEvidence]:
    return [
        pb.BeliefEvidence(
            episode_id=e.episode_id,
            title=e.title,
            date=e.date,
            quote=e.quote,
            support=_SUPPORT.get(e.support, common_pb2.SUPPORT_UNSPECIFIED),
        )
        for e in quotes
    ]


def belief_pb(belief: Belief) -> pb.Belief:
    """A belief on the wire."""
    return pb.Belief(
        id=belief.id,
        statement=belief.statement,
        status=belief.status,
        confidence=belief.confidence,
        evidence=_evidence(belief.evidence),
        contradicted_by=_evidence(belief.contradicted_by),
        confirmed=belief.confirmed,
        date=belief.date,
        model=belief.model,
        sensitive=belief.sensitive,
        derived=belief.derived,
    )


class BeliefsServicer:
    """The belief RPCs of memex.orchestrator.v1.OrchestratorService."""

    _slot: EngineSlot[Orchestrator]

    async def Reflect(self, request: pb.ReflectRequest, context: Context) -> pb.ReflectResponse:
        o = self._slot.get()
        r = await o.beliefs().reflect(
            o.tenant(request.tenant),
            since=request.since,
            until=request.until,
            max_episodes=request.max_episodes,
            include_sensitive=request.include_sensitive,
        )
        return pb.ReflectResponse(
            episodes_read=r.episodes_read,
            episodes_withheld=r.episodes_withheld,
            model_calls=r.model_calls,
            proposed=r.proposed,
            dropped_unquoted=r.dropped_unquoted,
            dropped_unsupported=r.dropped_unsupported,
            dropped_rejected=r.dropped_rejected,
            beliefs=[belief_pb(x) for x in r.beliefs],
            quotes=r.quotes,
            quotes_verbatim=r.quotes_verbatim,
            seconds=r.seconds,
            unreadable=r.unreadable,
            contested_earlier=r.contested_earlier,
        )

    async def ListBeliefs(
        self, request: pb.ListBeliefsRequest, context: Context
    ) -> pb.ListBeliefsResponse:
        o = self._slot.get()
        found = await o.beliefs().list(
            o.tenant(request.tenant),
            include_sensitive=request.include_sensitive,
            include_rejected=request.include_rejected,
            limit=request.limit,
        )
        return pb.ListBeliefsResponse(beliefs=[belief_pb(x) for x in found])

    async def ReviewBelief(
        self, request: pb.ReviewBeliefRequest, context: Context
    ) -> pb.ReviewBeliefResponse:
        o = self._slot.get()
        verdict = _VERDICTS.get(request.verdict, "")
        belief = await o.beliefs().review(o.tenant(request.tenant), request.id, verdict)
        return pb.ReviewBeliefResponse(belief=belief_pb(belief))

    async def ForgetBelief(
        self, request: pb.ForgetBeliefRequest, context: Context
    ) -> pb.ForgetBeliefResponse:
        o = self._slot.get()
        deleted = await o.beliefs().forget(o.tenant(request.tenant), request.id)
        return pb.ForgetBeliefResponse(deleted=deleted)

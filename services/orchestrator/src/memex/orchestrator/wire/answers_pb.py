"""Proto ⇄ domain translation of answers and the conversations and threads that keep them:
an ask's result, a checked citation, a conversation's messages, a queued thread's turns, a
logged ask (``OrchestratorServicer`` and the queued-turn events send them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memex.common.v1 import common_pb2
from memex.orchestrator.ask.events import AskResult
from memex.orchestrator.memory.items import Citation
from memex.orchestrator.state.store import Conversation, LoggedAsk, Message, Thread, Turn
from memex.orchestrator.v1 import orchestrator_pb2 as pb

SUPPORT = {
    "verbatim": common_pb2.SUPPORT_VERBATIM,
    "paraphrase": common_pb2.SUPPORT_PARAPHRASE,
    "inference": common_pb2.SUPPORT_INFERENCE,
}
STATES = {
    "pending": pb.TURN_STATE_PENDING,
    "thinking": pb.TURN_STATE_THINKING,
    "answered": pb.TURN_STATE_ANSWERED,
    "error": pb.TURN_STATE_ERROR,
}
ROLES = {"user": pb.MESSAGE_ROLE_USER, "assistant": pb.MESSAGE_ROLE_ASSISTANT}


def citation_pb(citation: Citation | dict[str, Any]) -> common_pb2.Citation:
    """A checked citation on the wire (from the domain object or its stored JSON)."""
    c = citation if isinstance(citation, dict) else citation.__dict__
    return common_pb2.Citation(
        ref=c["ref"],
        item_id=c["item_id"],
        episode_id=c["episode_id"],
        quote=c["quote"],
        support=SUPPORT.get(c["support"], common_pb2.SUPPORT_UNSPECIFIED),
        path=c.get("path", ""),  # stored before citations had paths
    )


def ask_pb(r: AskResult) -> pb.AskResponse:
    """An ask's structured result on the wire."""
    return pb.AskResponse(
        answer=r.answer,
        citations=citations_pb(r.citations),
        persona=r.persona,
        grounding=pb.GroundingReport(
            cited=r.grounding.cited,
            grounded=r.grounding.grounded,
            score=r.grounding.score,
            dropped=list(r.grounding.dropped),
            specifics=[
                pb.CheckedSpecific(text=s.text, kind=s.kind, verdict=s.verdict, ref=s.ref)
                for s in r.grounding.specifics
            ],
            dropped_claims=list(r.grounding.dropped_claims),
        ),
        abstained=r.abstained,
        stages=r.stages,
        reframed_question=r.reframed_question,
        opinion=r.opinion,
        withheld=r.withheld,
        model=r.model,
        latency_ms=r.latency_ms,
        turn_id=r.turn_id,
        as_of=r.as_of,
    )


def conversation_pb(c: Conversation) -> pb.Conversation:
    return pb.Conversation(
        id=c.id,
        title=c.title,
        persona=c.persona,
        created_at=c.created_at,
        updated_at=c.updated_at,
        message_count=c.message_count,
    )


def message_pb(m: Message) -> pb.ConversationMessage:
    return pb.ConversationMessage(
        id=m.id,
        role=ROLES[m.role],
        text=m.text,
        citations=[citation_pb(c) for c in m.citations],
        model=m.model,
        latency_ms=m.latency_ms,
        created_at=m.created_at,
        withheld=m.withheld,
    )


def turn_pb(t: Turn) -> pb.Turn:
    return pb.Turn(
        id=t.id,
        thread_id=t.thread_id,
        role=ROLES[t.role],
        text=t.text,
        citations=[citation_pb(c) for c in t.citations],
        state=STATES[t.state],
        error=t.error,
        created_at=t.created_at,
        withheld=t.withheld,
        as_of=t.as_of,
        reply_to=t.reply_to,
    )


def thread_pb(t: Thread) -> pb.Thread:
    return pb.Thread(id=t.id, title=t.title, created_at=t.created_at)


def logged_ask_pb(a: LoggedAsk) -> pb.LoggedAsk:
    return pb.LoggedAsk(
        turn_id=a.turn_id,
        question=a.question,
        persona=a.persona,
        model=a.model,
        prompt_version=a.prompt_version,
        answer=a.answer,
        abstained=a.abstained,
        cited_refs=a.cited_refs,
        latency_ms=a.latency_ms,
        created_at=a.created_at,
    )


def citations_pb(citations: Sequence[Citation]) -> list[common_pb2.Citation]:
    """Checked citations on the wire, in order."""
    return [citation_pb(c) for c in citations]

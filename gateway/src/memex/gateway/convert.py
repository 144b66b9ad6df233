"""Proto messages → the API's own models (ask, conversations, turns); the models every surface
shares (citations, hits, records, notes) convert themselves in ``memex.gateway.present``."""

from __future__ import annotations

from memex.gateway.models.ask import AskResponse, CheckedSpecific, Grounding
from memex.gateway.models.common import Role
from memex.gateway.models.conversations import Conversation, ConversationMessage
from memex.gateway.models.personas import Persona, PersonaList
from memex.gateway.models.turns import Thread, Turn
from memex.gateway.present import citations
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.shared.channels import CHANNEL_NAMES


def _enum_word(name: str, prefix: str) -> str:
    """``SUPPORT_VERBATIM`` → ``verbatim``."""
    return name.removeprefix(prefix).lower()


def ask(reply: opb.AskResponse) -> AskResponse:
    g = reply.grounding
    return AskResponse(
        answer=reply.answer,
        citations=citations(reply.citations),
        persona=reply.persona,
        grounding=Grounding(
            cited=g.cited,
            grounded=g.grounded,
            score=g.score,
            dropped=list(g.dropped),
            specifics=[
                CheckedSpecific(text=s.text, kind=s.kind, verdict=s.verdict, ref=s.ref)
                for s in g.specifics
            ],
            dropped_claims=list(g.dropped_claims),
        ),
        abstained=reply.abstained,
        stages=list(reply.stages),
        reframed_question=reply.reframed_question,
        opinion=reply.opinion,
        withheld=reply.withheld,
        model=reply.model,
        latency_ms=reply.latency_ms,
        turn_id=reply.turn_id,
        as_of=reply.as_of,
    )


def _role(role: opb.MessageRole.ValueType) -> Role:
    return _enum_word(opb.MessageRole.Name(role), "MESSAGE_ROLE_")  # type: ignore[return-value]


def conversation(c: opb.Conversation) -> Conversation:
    return Conversation(
        id=c.id,
        title=c.title,
        persona=c.persona,
        created_at=c.created_at,
        updated_at=c.updated_at,
        message_count=c.message_count,
    )


def message(m: opb.ConversationMessage) -> ConversationMessage:
    return ConversationMessage(
        id=m.id,
        role=_role(m.role),
        text=m.text,
        citations=citations(m.citations),
        model=m.model,
        latency_ms=m.latency_ms,
        created_at=m.created_at,
        withheld=m.withheld,
    )


def turn(t: opb.Turn) -> Turn:
    return Turn(
        id=t.id,
        thread_id=t.thread_id,
        role=_role(t.role),
        text=t.text,
        citations=citations(t.citations),
        state=_enum_word(opb.TurnState.Name(t.state), "TURN_STATE_"),
        error=t.error,
        created_at=t.created_at,
        withheld=t.withheld,
        as_of=t.as_of,
        reply_to=t.reply_to,
    )


def thread(t: opb.Thread) -> Thread:
    return Thread(id=t.id, title=t.title, created_at=t.created_at)


def persona(p: opb.Persona) -> Persona:
    return Persona(
        name=p.name,
        description=p.description,
        default_for_ask=p.default_for_ask,
        default_for_chat=p.default_for_chat,
        chunks=p.chunks,
        channels=[CHANNEL_NAMES.get(c, "unspecified") for c in p.channels],
        time_window_days=p.time_window_days,
        include_contested=p.include_contested,
        observation_weight=p.observation_weight,
        stages=list(p.stages),
        model_calls=p.model_calls,
        system_prompt=p.system_prompt,
    )


def personas(reply: opb.ListPersonasResponse) -> PersonaList:
    return PersonaList(
        personas=[persona(p) for p in reply.personas],
        default_ask=reply.default_ask,
        default_chat=reply.default_chat,
    )

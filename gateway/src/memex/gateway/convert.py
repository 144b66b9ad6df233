"""Proto messages → the API's models (enums become lower-case words, Structs plain JSON)."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from memex.common.v1 import common_pb2
from memex.gateway import models
from memex.orchestrator.v1 import orchestrator_pb2 as opb
from memex.retrieval.v1 import retrieval_pb2 as rpb


def _enum_word(name: str, prefix: str) -> str:
    """``SUPPORT_VERBATIM`` → ``verbatim``."""
    return name.removeprefix(prefix).lower()


def _struct(value: Struct) -> dict[str, Any]:
    return json_format.MessageToDict(value)


def citation(c: common_pb2.Citation) -> models.Citation:
    support = _enum_word(common_pb2.Support.Name(c.support), "SUPPORT_")
    return models.Citation(
        ref=c.ref,
        item_id=c.item_id,
        episode_id=c.episode_id,
        quote=c.quote,
        support=support,
    )


def citations(items: Any) -> list[models.Citation]:
    return [citation(c) for c in items]


def item(i: rpb.RetrievedItem) -> models.RetrievedItem:
    p = i.provenance
    return models.RetrievedItem(
        id=i.id,
        kind=_enum_word(rpb.ItemKind.Name(i.kind), "ITEM_KIND_"),
        text=i.text,
        provenance=models.Provenance(
            episode_id=p.episode_id, date=p.date, title=p.title, path=p.path, heading=p.heading
        ),
        citation=i.citation,
        sensitive=i.sensitive,
        collection=i.collection,
        channel_scores=[
            models.ChannelScore(
                channel=_enum_word(common_pb2.Channel.Name(s.channel), "CHANNEL_"),
                rank=s.rank,
                score=s.score,
            )
            for s in i.channel_scores
        ],
        fused_score=i.fused_score,
        recency_factor=i.recency_factor,
        salience_factor=i.salience_factor,
        score=i.score,
        attributes=_struct(i.attributes),
    )


def record(r: rpb.Record) -> models.Record:
    return models.Record(
        collection=r.collection,
        id=r.id,
        fields=_struct(r.fields),
        citation=r.citation,
        sensitive=r.sensitive,
    )


def ask(reply: opb.AskResponse) -> models.AskResponse:
    g = reply.grounding
    return models.AskResponse(
        answer=reply.answer,
        citations=citations(reply.citations),
        persona=reply.persona,
        grounding=models.Grounding(
            cited=g.cited, grounded=g.grounded, score=g.score, dropped=list(g.dropped)
        ),
        abstained=reply.abstained,
        stages=list(reply.stages),
        reframed_question=reply.reframed_question,
        opinion=reply.opinion,
        withheld=reply.withheld,
        model=reply.model,
        latency_ms=reply.latency_ms,
        turn_id=reply.turn_id,
    )


def _role(role: opb.MessageRole.ValueType) -> models.Role:
    return _enum_word(opb.MessageRole.Name(role), "MESSAGE_ROLE_")  # type: ignore[return-value]


def conversation(c: opb.Conversation) -> models.Conversation:
    return models.Conversation(
        id=c.id,
        title=c.title,
        persona=c.persona,
        created_at=c.created_at,
        updated_at=c.updated_at,
        message_count=c.message_count,
    )


def message(m: opb.ConversationMessage) -> models.ConversationMessage:
    return models.ConversationMessage(
        id=m.id,
        role=_role(m.role),
        text=m.text,
        citations=citations(m.citations),
        model=m.model,
        latency_ms=m.latency_ms,
        created_at=m.created_at,
    )


def turn(t: opb.Turn) -> models.Turn:
    return models.Turn(
        id=t.id,
        thread_id=t.thread_id,
        role=_role(t.role),
        text=t.text,
        citations=citations(t.citations),
        state=_enum_word(opb.TurnState.Name(t.state), "TURN_STATE_"),
        error=t.error,
        created_at=t.created_at,
    )


def thread(t: opb.Thread) -> models.Thread:
    return models.Thread(id=t.id, title=t.title, created_at=t.created_at)


def field_filter(f: models.FieldFilter) -> rpb.FieldFilter:
    out = rpb.FieldFilter(field=f.field, op=f.op)
    json_format.ParseDict(f.value, out.value)
    return out


def persona(p: opb.Persona) -> models.Persona:
    return models.Persona(
        name=p.name,
        description=p.description,
        default_for_ask=p.default_for_ask,
        default_for_chat=p.default_for_chat,
        chunks=p.chunks,
        channels=[_enum_word(common_pb2.Channel.Name(c), "CHANNEL_") for c in p.channels],
        time_window_days=p.time_window_days,
        include_contested=p.include_contested,
        observation_weight=p.observation_weight,
        stages=list(p.stages),
        model_calls=p.model_calls,
        system_prompt=p.system_prompt,
    )


def personas(reply: opb.ListPersonasResponse) -> models.PersonaList:
    return models.PersonaList(
        personas=[persona(p) for p in reply.personas],
        default_ask=reply.default_ask,
        default_chat=reply.default_chat,
    )

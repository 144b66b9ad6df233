"""Beliefs as every surface shows them (issue 37, docs/reflect.md): the HTTP API's shapes, which
the MCP tools and the CLI print too (``present.py``'s vocabulary of support labels)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memex.gateway.models.common import Int, Strict
from memex.gateway.present import SupportName, support_name
from memex.orchestrator.v1 import orchestrator_pb2 as opb

StatusName = Literal["active", "contested", "rejected"]


class BeliefEvidence(BaseModel):
    """One quote of one note, graded against the note (SPEC B10)."""

    episode_id: str
    title: str
    date: str = Field(description="The note's date, YYYY-MM-DD.")
    quote: str
    support: SupportName = Field(
        description="verbatim: the quote is in the note; paraphrase: most of its words stand in "
        "one sentence of the note."
    )

    @classmethod
    def from_proto(cls, e: opb.BeliefEvidence) -> BeliefEvidence:
        return cls(
            episode_id=e.episode_id,
            title=e.title,
            date=e.date,
            quote=e.quote,
            support=support_name(e.support),
        )


class Belief(BaseModel):
    """A conclusion drawn from the person's notes, with what it rests on."""

    id: str
    statement: str
    status: StatusName = Field(
        description="active; contested (a newer note disagrees); rejected (by the person: "
        "loads nowhere and is not made again from the same evidence)."
    )
    confidence: float = Field(ge=0, le=1)
    evidence: list[BeliefEvidence]
    contradicted_by: list[BeliefEvidence]
    confirmed: bool = Field(description="The person confirmed it.")
    date: str = Field(description="YYYY-MM-DD it was last derived.")
    model: str = Field(description="The model that derived it; empty for the vault's own.")
    sensitive: bool
    derived: bool = Field(
        description="Made by the learning loop; false for the vault's records/beliefs.jsonl."
    )

    @classmethod
    def from_proto(cls, b: opb.Belief) -> Belief:
        status = b.status if b.status in ("active", "contested", "rejected") else "active"
        return cls(
            id=b.id,
            statement=b.statement,
            status=status,
            confidence=min(max(b.confidence, 0.0), 1.0),
            evidence=[BeliefEvidence.from_proto(e) for e in b.evidence],
            contradicted_by=[BeliefEvidence.from_proto(e) for e in b.contradicted_by],
            confirmed=b.confirmed,
            date=b.date,
            model=b.model,
            sensitive=b.sensitive,
            derived=b.derived,
        )


class BeliefsResponse(BaseModel):
    beliefs: list[Belief]


class BeliefForgotten(BaseModel):
    deleted: int = Field(description="1 when the belief was deleted.")


class ReflectRequest(Strict):
    """A reflect run's window and limits."""

    since: str = Field(
        "",
        pattern=r"^(\d{4}-\d{2}-\d{2})?$",
        description="Notes dated on or after (YYYY-MM-DD); empty: the last reflect_days days.",
    )
    until: str = Field(
        "", pattern=r"^(\d{4}-\d{2}-\d{2})?$", description="Notes dated on or before."
    )
    max_episodes: Int = Field(0, ge=0, le=200, description="Newest notes read; 0: the setting.")
    include_sensitive: bool = Field(
        False,
        description="Let sensitive notes feed it where the reasoner may see them (a local one, "
        "so set); needs a key granted sensitive reads, or loopback without a key.",
    )


class ReflectReport(BaseModel):
    """What a reflect run did."""

    episodes_read: int = Field(description="Notes sent to the model.")
    episodes_withheld: int = Field(description="Sensitive notes held back from it.")
    model_calls: int
    proposed: int = Field(description="Conclusions the model proposed.")
    dropped_unquoted: int = Field(description="Dropped: no verbatim or close quote.")
    dropped_unsupported: int = Field(
        0, description="Dropped: states a specific none of the notes it quotes holds."
    )
    dropped_rejected: int = Field(description="Dropped: rejected before on the same evidence.")
    contested_earlier: int = Field(
        0, description="Earlier beliefs a newer note disagreed with: now contested (in beliefs)."
    )
    unreadable: int = Field(description="Model replies that were not JSON.")
    beliefs: list[Belief] = Field(description="Made or updated by this run.")
    quotes: int = Field(description="Their supporting quotes.")
    quotes_verbatim: int = Field(description="Of those, graded verbatim.")
    seconds: float

    @classmethod
    def from_proto(cls, r: opb.ReflectResponse) -> ReflectReport:
        return cls(
            episodes_read=r.episodes_read,
            episodes_withheld=r.episodes_withheld,
            model_calls=r.model_calls,
            proposed=r.proposed,
            dropped_unquoted=r.dropped_unquoted,
            dropped_unsupported=r.dropped_unsupported,
            dropped_rejected=r.dropped_rejected,
            contested_earlier=r.contested_earlier,
            unreadable=r.unreadable,
            beliefs=[Belief.from_proto(b) for b in r.beliefs],
            quotes=r.quotes,
            quotes_verbatim=r.quotes_verbatim,
            seconds=r.seconds,
        )

"""The MCP tools' structured results: the shared models of ``memex.gateway.present``, wrapped.

Every result that rests on memory carries citations (``[[Note]]`` or ``collection:id``) so the
client can show where an answer came from.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memex.gateway.present import Citation, Note, Record, SearchHit, Timeline, citations
from memex.orchestrator.v1 import orchestrator_pb2

__all__ = ["AskResult", "InboxResult", "Note", "RecordsResult", "SearchResult", "Timeline"]


class AskResult(BaseModel):
    """A cited answer from memory."""

    answer: str
    citations: list[Citation]
    abstained: bool = Field(description="true when memory did not hold enough to answer")
    withheld: int = Field(
        description="sensitive notes held back from the answer (not asked for, or not allowed)"
    )
    opinion: str = Field(description="an opinion offered, kept apart from the cited answer")
    persona: str
    model: str
    grounding_score: float = Field(description="share of the model's citations that held up")
    latency_ms: float
    as_of: str = Field("", description='the day whose memory answered; "" for now')

    @classmethod
    def from_proto(cls, r: orchestrator_pb2.AskResponse) -> AskResult:
        """The orchestrator's answer as a tool result."""
        return cls(
            answer=r.answer,
            citations=citations(r.citations),
            abstained=r.abstained,
            withheld=r.withheld,
            opinion=r.opinion,
            persona=r.persona,
            model=r.model,
            grounding_score=r.grounding.score,
            latency_ms=r.latency_ms,
            as_of=r.as_of,
        )


class SearchResult(BaseModel):
    """Search results, best first."""

    query: str
    hits: list[SearchHit]


class RecordsResult(BaseModel):
    """Records matching a query."""

    collection: str
    records: list[Record]


class InboxResult(BaseModel):
    """Inbox items, soonest first."""

    items: list[Record]

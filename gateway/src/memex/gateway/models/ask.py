"""The bodies of POST /v1/ask (one cited answer, or its server-sent events ``started`` and
``redraft``) and of POST /v1/search. A streamed ask's ``delta`` and ``error`` events are chat's
(``chat``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from memex.gateway.models.common import MAX_TEXT, Date, Int, SensitiveAnswer, Strict
from memex.gateway.present import ChannelName, Citation, SearchHit


class AskRequest(Strict):
    question: str = Field(min_length=1, max_length=MAX_TEXT)
    persona: str = Field("", max_length=64, description="Empty: analyst.")
    limit: Int = Field(0, ge=0, le=50, description="Items sent to the answer; 0: the default (8).")
    include_sensitive: SensitiveAnswer = False
    stream: bool = Field(
        False,
        description="true: server-sent events (started, delta..., result) instead of one JSON "
        "answer, so the first words show while the model writes.",
    )
    as_of: Date = Field(
        "",
        description="Answer from the memory as it stood at the end of this day (UTC), with it as "
        '"today"; empty: now. A day after today is a 400 (docs/as-of.md).',
    )


class CheckedSpecific(BaseModel):
    text: str = Field(description="A specific as the answer wrote it.")
    kind: str = Field(description="code, flag, identifier, key, path, version, figure or name.")
    verdict: str = Field(
        description='"supported" (a cited source holds it), "restated" (the question writes '
        'it) or "unsupported".'
    )
    ref: str = Field(description="The cited source that holds it; empty when unsupported.")


class Grounding(BaseModel):
    cited: int = Field(description="Citations the model gave.")
    grounded: int = Field(description="Citations kept after grounding.")
    score: float = Field(description="grounded / cited; 0 when nothing was cited.")
    dropped: list[str] = Field(description="Refs dropped because they named nothing shown.")
    specifics: list[CheckedSpecific] = Field(
        default_factory=list,
        description="The claim check: every specific the answer stated, with its verdict.",
    )
    dropped_claims: list[str] = Field(
        default_factory=list,
        description="Sentences cut because a specific of theirs is in no cited source.",
    )


class AskResponse(BaseModel):
    event: ClassVar[str] = "result"  # the SSE event a streamed ask ends with

    answer: str
    citations: list[Citation]
    persona: str
    grounding: Grounding
    abstained: bool
    stages: list[str] = Field(description='Stages that ran, e.g. ["plan", "retrieve", ...].')
    reframed_question: str
    opinion: str = Field(description="An opinion the model offered, apart from the answer.")
    withheld: int = Field(
        description="Sensitive items held back from the model: the request did not set "
        "include_sensitive, or the reasoner is remote."
    )
    model: str
    latency_ms: float
    turn_id: str
    as_of: str = Field("", description='The day whose memory answered; "" for now.')


class AskStarted(BaseModel):
    """`event: started`, first event of a streamed ask: the sources are chosen."""

    event: ClassVar[str] = "started"  # the SSE event it is sent as
    model: str
    persona: str
    sources: list[str] = Field(
        description='Refs of the sources briefed to the model, e.g. "[[Flat Deposit]]".'
    )
    source_paths: list[str] = Field(
        default_factory=list,
        description='The vault path of each source\'s note, in the same order; "" for a record.',
    )


class AskRedraft(BaseModel):
    """`event: redraft`, at most once in a streamed ask: the draft so far is set aside. Either
    the best sources, read first, did not answer the question and the model now reads all of
    them, or it read all of them and answered otherwise (other notes or figures); the deltas
    that follow start a new draft."""

    event: ClassVar[str] = "redraft"  # the SSE event it is sent as
    reason: str = Field(description='In words a person can read: "reading all 8 sources".')


class SearchRequest(Strict):
    query: str = Field(min_length=1, max_length=2000)
    limit: Int = Field(0, ge=0, le=100, description="Items to return; 0: the default.")
    persona: str = Field("", max_length=64, description="Persona whose search settings apply.")
    channels: list[ChannelName] = Field(
        default_factory=list, max_length=5, description="Empty: the persona's channels."
    )
    since: Date = Field("", description="Only items dated on or after; undated items drop out.")
    until: Date = Field("", description="Only items dated on or before.")
    tags: list[str] = Field(default_factory=list, max_length=16, description="All must hold.")
    collections: list[str] = Field(
        default_factory=list, max_length=16, description="Only records of these collections."
    )
    include_sensitive: bool = Field(
        False, description="Include sensitive items: needs a key granted it (or loopback, no key)."
    )
    as_of: Date = Field(
        "",
        description="Search the memory as it stood at the end of this day (UTC): the notes and "
        "records as they were then; empty: now. A day after today is a 400 (docs/as-of.md).",
    )


class SearchResponse(BaseModel):
    items: list[SearchHit]
    turn_id: str

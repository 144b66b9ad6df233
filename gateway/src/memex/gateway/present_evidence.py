"""An answer's evidence bundle (issue 37) as the surfaces hand it out: the shape of the JSON file
(docs/evidence.md), checked here before it leaves the gateway, so the OpenAPI spec and the file
agree. The orchestrator builds it (``memex.orchestrator.record.evidence``); this module only
describes and checks it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FILENAME = "memex-evidence-{turn_id}.json"
"""The name a bundle is saved under (Content-Disposition, the web chat's download)."""


def filename(turn_id: str) -> str:
    """The download name of the bundle of telemetry turn ``turn_id``."""
    return FILENAME.format(turn_id=turn_id)


def as_of_line(as_of: str) -> str:
    """How a person is told which day's memory an answer came from; "" for now."""
    return f"As of: {as_of} (the memory as it stood at the end of that day)" if as_of else ""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvidenceExcerpt(_Strict):
    """One numbered source the model was shown, as it was shown."""

    number: int = Field(description="The source's number in the model's prompt, [1]..[n].")
    ref: str = Field(description='How a citation names it: "[[Note Title]]" or "collection:id".')
    kind: str = Field(description="chunk, record, belief or observation.")
    item_id: str
    episode_id: str = Field(description="The note's id; empty for a record.")
    title: str
    path: str = Field(description="The note's path in the vault; empty for a record.")
    heading: str
    date: str
    collection: str = Field(description="A record's collection; empty for a note's chunk.")
    sensitive: bool
    cited: bool = Field(description="A kept citation rests on this excerpt.")
    text: str = Field(description="The excerpt the model read, in the note's own words.")
    excerpt_sha256: str = Field(description="SHA-256 (hex) of `text` as UTF-8.")
    note_version: str = Field(
        description="The note's fingerprint when it was indexed (retrieval's SHA-256 over the "
        "note's text and the parser, chunker, embedding model and sensitivity rules): the same "
        "while the note is unchanged and indexed the same way. Empty for a record."
    )
    chunk_start: int | None = Field(description="Where the chunk begins in the note's text.")
    chunk_end: int | None


class LeftOutExcerpt(_Strict):
    """A sensitive excerpt, left out: only that one was."""

    number: int
    left_out: Literal["sensitive"]


class EvidenceCitation(_Strict):
    """A citation that survived grounding, with its quote and support grade (SPEC B10)."""

    ref: str
    item_id: str
    episode_id: str
    path: str
    quote: str
    support: Literal["verbatim", "paraphrase", "inference"]
    source: int | None = Field(description="The number of the excerpt it rests on.")


class LeftOutCitation(_Strict):
    """A citation of a sensitive excerpt, left out (its quote is the note's words)."""

    source: int | None
    left_out: Literal["sensitive"]


class EvidenceGrounding(_Strict):
    """How many source numbers the model wrote, and how many named a source it was shown."""

    cited: int
    grounded: int
    score: float
    dropped: list[str] = Field(description="Refs dropped: they named nothing shown.")


class EvidenceSpecific(_Strict):
    """One specific the answer stated, and the claim check's verdict on it."""

    text: str
    kind: str
    verdict: str = Field(description="supported, restated or unsupported.")
    ref: str = Field(description="The cited source that holds it; empty when unsupported.")


class EvidenceClaimCheck(_Strict):
    """The claim check of the answer (docs/orchestrator.md)."""

    specifics: list[EvidenceSpecific]
    dropped_claims: list[str] = Field(description="Sentences cut for an unsupported specific.")


class EvidenceLeftOut(_Strict):
    """What this copy leaves out because it did not ask for sensitive items."""

    excerpts: int
    citations: int
    answer: bool = Field(
        description="The answer drew on a sensitive excerpt, so its text and claim check are "
        "left out too."
    )


class EvidenceBundle(_Strict):
    """An answer's evidence: everything needed to see what it rested on (docs/evidence.md)."""

    format: str = Field(description='"memex-evidence/1".')
    turn_id: str = Field(description="The answer's telemetry turn (an ask's turn_id).")
    kind: Literal["ask", "chat", "queued"]
    created_at: str = Field(description="When the answer was final, RFC 3339 UTC.")
    question: str
    answer: str
    abstained: bool
    model: str
    prompt_version: str
    persona: str
    as_of: str = Field(
        "",
        description='The day whose memory answered (YYYY-MM-DD, docs/as-of.md); "" for the memory '
        "as it stood when asked (and in bundles from before as_of existed).",
    )
    conversation_id: str = Field(description="A chat reply's conversation; else empty.")
    message_id: str = Field(description="A chat reply's message id; else empty.")
    thread_id: str = Field(description="A queued answer's thread; else empty.")
    reply_turn_id: str = Field(description="A queued answer's (assistant) turn id; else empty.")
    asked_as: str = Field(
        description="A queued answer: the question as the model got it, with the thread's "
        "earlier turns; else empty. Left out (a placeholder) when the turn let the model see "
        "sensitive notes and this copy did not ask for them."
    )
    asked_sensitive: bool = Field(
        False, description="A queued answer whose turn let the model see sensitive notes."
    )
    excerpts: list[EvidenceExcerpt | LeftOutExcerpt]
    citations: list[EvidenceCitation | LeftOutCitation]
    grounding: EvidenceGrounding
    claim_check: EvidenceClaimCheck
    left_out: EvidenceLeftOut

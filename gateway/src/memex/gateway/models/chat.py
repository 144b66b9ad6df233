"""The body of POST /v1/chat and its server-sent events (meta, citations, done, error); a
streamed ask sends the same ``error`` events. A ``delta`` event, many, is ``{"text": ...}``: the
next piece of the reply (of a streamed ask: of the unchecked draft), written from the
orchestrator's text with no model per token (``chat_stream.delta_json``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from memex.gateway.models.common import MAX_TEXT, Date, SensitiveAnswer, Strict
from memex.gateway.present import Citation


class ChatRequest(Strict):
    message: str = Field(min_length=1, max_length=MAX_TEXT)
    conversation_id: str = Field("", max_length=128, description="Empty: a new conversation.")
    persona: str = Field("", max_length=64, description="Empty: friend.")
    include_sensitive: SensitiveAnswer = False
    as_of: Date = Field(
        "",
        description="This reply reads the memory as it stood at the end of this day (UTC), with "
        'it as "today"; empty: now. For this message only. A day after today is a 400 '
        "(docs/as-of.md).",
    )


class ChatMeta(BaseModel):
    """`event: meta`, first."""

    event: ClassVar[str] = "meta"  # the SSE event it is sent as
    conversation_id: str
    model: str
    persona: str
    as_of: str = Field("", description='The day whose memory this reply reads; "" for now.')


class ChatCitations(BaseModel):
    """`event: citations`, once, after the last delta."""

    event: ClassVar[str] = "citations"  # the SSE event it is sent as
    citations: list[Citation]
    withheld: int


class ChatDone(BaseModel):
    """`event: done`, terminal."""

    event: ClassVar[str] = "done"  # the SSE event it is sent as
    message_id: str
    latency_ms: float
    chunks_considered: int


class ChatError(BaseModel):
    """`event: error`, terminal, in place of the rest of a stream (chat or ask)."""

    event: ClassVar[str] = "error"  # the SSE event it is sent as
    code: str
    message: str

"""The bodies of /v1/conversations: stored chat conversations, listed and replayed."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memex.gateway.models.common import Role
from memex.gateway.present import Citation


class Conversation(BaseModel):
    id: str
    title: str
    persona: str
    created_at: str
    updated_at: str
    message_count: int


class ConversationMessage(BaseModel):
    id: str
    role: Role
    text: str
    citations: list[Citation]
    model: str
    latency_ms: float
    created_at: str = Field(description="RFC 3339 UTC.")
    withheld: bool = Field(
        False,
        description="The reply drew on sensitive notes and the request did not set "
        "include_sensitive: its text is a placeholder and its citations are left out.",
    )


class ConversationList(BaseModel):
    conversations: list[Conversation]


class ConversationDetail(BaseModel):
    conversation: Conversation
    messages: list[ConversationMessage]

"""The bodies of the OpenAI-compatible routes: chat completions (OpenAI's request and response,
with memex's extension ``memex``) and the model list."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memex.gateway.models.common import Date, SensitiveAnswer, Strict
from memex.gateway.present import Citation


class ContentPart(BaseModel):
    model_config = ConfigDict(strict=True)

    type: str
    text: str = ""


class OpenAIMessage(BaseModel):
    model_config = ConfigDict(strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    def plain_text(self) -> str:
        """The message's text (text parts joined; other parts ignored)."""
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content if p.type == "text")
        return self.content or ""


class MemexOptions(Strict):
    """Request extension `memex` (OpenAI clients: `extra_body={"memex": {...}}`)."""

    conversation_id: str = Field(
        "", max_length=128, description="Continue this memex conversation (its stored history)."
    )
    persona: str = Field("", max_length=64, description="Empty: friend.")
    include_sensitive: SensitiveAnswer = False
    as_of: Date = Field(
        "",
        description="The reply reads the memory as it stood at the end of this day (UTC); "
        "empty: now. A day after today is a 400 (docs/as-of.md).",
    )


class ChatCompletionRequest(BaseModel):
    """OpenAI's request. Sampling fields (temperature, max_tokens, ...) are accepted and ignored:
    memex's persona settings decide them."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field("memex", max_length=128)
    messages: list[OpenAIMessage] = Field(min_length=1, max_length=256)
    stream: bool = False
    memex: MemexOptions | None = None


class MemexExtension(BaseModel):
    """Response extension `memex`: what an OpenAI completion has no place for."""

    citations: list[Citation]
    withheld: int
    conversation_id: str
    message_id: str = ""


class CompletionMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class CompletionChoice(BaseModel):
    index: int
    message: CompletionMessage
    finish_reason: Literal["stop"]


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    memex: MemexExtension


class ModelPersona(BaseModel):
    """Extension `memex` of a model: the persona behind it."""

    persona: str
    description: str


class Model(BaseModel):
    """An OpenAI model object: one memex persona (``memex/<persona>``), or ``memex`` for the
    chat default."""

    id: str = Field(description='"memex" (the chat default persona) or "memex/<persona>".')
    object: Literal["model"] = "model"
    created: int = Field(description="Unix seconds: when this gateway started.")
    owned_by: str = "memex"
    memex: ModelPersona


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]

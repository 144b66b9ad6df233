"""What every generation engine is to the rest of the service: one small protocol, no gRPC.

An engine turns a checked ``GenerationRequest`` into a stream of ``Delta`` events ending with one
``Finished``. The stream is an async generator: closing it (the caller went away, or its deadline
passed) must stop the work within one decode step before the close returns, so the slot the
scheduler lent is really free when it is given back.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant"]
FinishReason = Literal["stop", "length", "cancelled"]


@dataclass(frozen=True)
class ChatMessage:
    """One turn of the conversation."""

    role: Role
    content: str


@dataclass(frozen=True)
class Sampling:
    """Checked sampling settings, engine defaults already applied."""

    temperature: float
    top_p: float
    max_tokens: int
    # True when the caller asked for max_tokens (then a prompt that leaves no room is an error);
    # False when it is the service default (then it is shortened to fit the context).
    max_tokens_requested: bool = False
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class GenerationRequest:
    """A request the core has validated; engines may trust its values."""

    messages: tuple[ChatMessage, ...]
    sampling: Sampling
    # Parsed JSON Schema (already checked to be a valid schema), or None for free text.
    json_schema: Mapping[str, Any] | None = None
    request_id: str = ""
    # time.monotonic() by which the caller wants the answer, or None.
    deadline: float | None = None


@dataclass(frozen=True)
class Delta:
    """A piece of generated text."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The end of a generation."""

    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int


Event = Delta | Finished


@dataclass(frozen=True)
class EngineInfo:
    """What clients learn about the engine (SPEC B3 reads ``local``)."""

    engine: str
    model: str
    context_length: int
    local: bool
    # Model names a request may ask for (the reported one first).
    aliases: tuple[str, ...] = field(default=())
    # Prompt tokens per second, measured at load and raised by faster real prompts; 0: unknown.
    prefill_tokens_per_second: float = 0.0


class Engine(Protocol):
    """A loaded generation engine. Created and closed by an async context manager."""

    info: EngineInfo

    def generate(self, request: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Streams the reply to ``request``: ``Delta`` events, then exactly one ``Finished``.

        Raises domain errors (``memex.shared.errors``) for bad input or an unavailable backend,
        before the first event where it can.
        """
        ...

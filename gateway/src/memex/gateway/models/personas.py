"""The body of GET /v1/personas: every persona ask and chat accept, as its file sets it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Channel = Literal["unspecified", "vector", "keyword", "graph", "beliefs", "observations"]


class Persona(BaseModel):
    """A persona ask and chat accept, as its file sets it (SPEC B6)."""

    name: str = Field(description="What `persona` takes in ask, chat and search, e.g. analyst.")
    description: str
    default_for_ask: bool = Field(description="An empty persona in ask means this one.")
    default_for_chat: bool = Field(description="An empty persona in chat means this one.")
    chunks: int = Field(description="Items briefed to the model.")
    channels: list[Channel] = Field(description="Retrieval channels searched.")
    time_window_days: int = Field(description="Only items this recent; 0: all time.")
    include_contested: bool
    observation_weight: float
    stages: list[str] = Field(description="Ask stages, in order.")
    model_calls: int = Field(description="Reasoner calls one ask makes, at most.")
    system_prompt: str = Field(description="The persona's instructions to the model.")


class PersonaList(BaseModel):
    """Every persona, sorted by name: the built-ins and those in the personas folder."""

    personas: list[Persona]
    default_ask: str
    default_chat: str

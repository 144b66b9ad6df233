"""Personas (SPEC B6): lenses loaded from TOML files; users add their own in a folder.

A persona file (``<name>.toml``) sets: ``name``, ``description``, ``default_for`` (``ask``,
``chat``), ``chunks`` (items briefed), ``channels`` (vector, keyword, graph, beliefs,
observations), ``time_window_days`` (0: all time), ``include_contested``, ``observation_weight``,
``stages`` and ``system_prompt``. Ask stages, in order: ``reframe`` (a model call rewriting the
question), ``plan`` (model), ``retrieve`` (local), ``seek_counter_evidence`` (model, then a second
local retrieval), ``synthesize`` (model), ``ground_check`` (mechanical), ``revise`` (model).
"""

from __future__ import annotations

import logging
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memex.shared.errors import NotFound

log = logging.getLogger(__name__)

ChannelName = Literal["vector", "keyword", "graph", "beliefs", "observations"]
Stage = Literal[
    "reframe", "plan", "retrieve", "seek_counter_evidence", "synthesize", "ground_check", "revise"
]
MODEL_STAGES: frozenset[str] = frozenset(
    {"reframe", "plan", "seek_counter_evidence", "synthesize", "revise"}
)


class Persona(BaseModel):
    """One lens: what to retrieve, how to brief, which ask stages to run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    description: str = ""
    default_for: list[Literal["ask", "chat"]] = []
    chunks: int = Field(10, ge=1, le=100)
    channels: list[ChannelName] = ["vector", "keyword", "graph"]
    time_window_days: int = Field(0, ge=0)
    include_contested: bool = False
    observation_weight: float = Field(1.0, gt=0)
    stages: list[Stage] = ["plan", "retrieve", "synthesize", "ground_check"]
    system_prompt: str

    @field_validator("stages")
    @classmethod
    def _needs_synthesis(cls, stages: list[str]) -> list[str]:
        for required in ("retrieve", "synthesize"):
            if required not in stages:
                raise ValueError(f"stages must include {required!r}")
        return stages

    @property
    def model_calls(self) -> int:
        """Reasoner calls one ask makes with this persona (the plan may fall back, never add)."""
        return sum(1 for stage in self.stages if stage in MODEL_STAGES)


class Personas:
    """The loaded personas by name, with the defaults for ask and chat."""

    def __init__(self, personas: dict[str, Persona]) -> None:
        self._by_name = personas
        self.default_ask = self._default("ask", "analyst")
        self.default_chat = self._default("chat", "friend")

    def _default(self, purpose: Literal["ask", "chat"], fallback: str) -> str:
        marked = [p.name for p in self._by_name.values() if purpose in p.default_for]
        return marked[-1] if marked else fallback

    def names(self) -> list[str]:
        """Every persona name, sorted."""
        return sorted(self._by_name)

    def all(self) -> list[Persona]:
        """Every persona, sorted by name."""
        return [self._by_name[name] for name in self.names()]

    def get(self, name: str, purpose: Literal["ask", "chat"]) -> Persona:
        """The named persona, or the default for ``purpose`` when ``name`` is empty."""
        name = name or (self.default_ask if purpose == "ask" else self.default_chat)
        persona = self._by_name.get(name)
        if persona is None:
            raise NotFound(f"unknown persona {name!r}; known: {', '.join(self.names())}")
        return persona


def _load_file(path: Path) -> Persona | None:
    try:
        return Persona.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
        log.error("persona file %s skipped: %s", path, str(exc).replace("\n", "; "))
        return None


def load_personas(user_dir: Path | None = None) -> Personas:
    """The built-ins, then every ``*.toml`` in ``user_dir`` (which may replace a built-in).
    A broken user file is skipped with an error in the log naming the file and the problem."""
    personas: dict[str, Persona] = {}
    for entry in sorted(
        resources.files("memex.orchestrator.personas").iterdir(), key=lambda e: e.name
    ):
        if entry.name.endswith(".toml"):
            persona = Persona.model_validate(tomllib.loads(entry.read_text(encoding="utf-8")))
            personas[persona.name] = persona
    if user_dir is not None and user_dir.is_dir():
        for path in sorted(user_dir.glob("*.toml")):
            loaded = _load_file(path)
            if loaded is not None:
                personas[loaded.name] = loaded
    return Personas(personas)

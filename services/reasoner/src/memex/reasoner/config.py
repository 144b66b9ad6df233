"""Reasoner service settings (``MEMEX_REASONER_...``).

The engine is always an explicit choice: nothing falls back to the stub when a real model is
missing or unreachable, and the stub refuses to start when a real model is also configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from memex.reasoner.catalogue import CATALOGUE, DEFAULT_MODEL, UnknownModel, lookup
from memex.shared.settings import ServiceSettings

EngineKind = Literal["llama_cpp", "openai", "stub"]
StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]
SpeculativeMode = Literal["none", "prompt-lookup"]  # the same as memex.reasoner.speculative's


def default_model_path() -> Path:
    """Where `make models` puts the default model's GGUF (``DEFAULT_MODEL`` in the catalogue)."""
    return lookup(DEFAULT_MODEL).path()


class ReasonerSettings(ServiceSettings):
    """Everything the reasoner service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_REASONER_")

    port: int = Field(50053, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    engine: EngineKind = Field(
        "llama_cpp",
        description="llama_cpp (a GGUF in process), openai (any OpenAI-compatible server: vLLM, "
        "Ollama, a cloud API) or stub (deterministic text for development and tests).",
    )
    model_name: str = Field(
        "",
        description="Name reported to clients and accepted in requests; empty uses the GGUF file "
        "name (llama_cpp), the remote model (openai) or 'stub'.",
    )

    # Scheduling, for every engine.
    max_active: int = Field(
        0,
        ge=0,
        le=256,
        description="Generations running at once, more wait in a FIFO queue; 0 picks per engine "
        "(llama_cpp: 1, each needs its own context and cores; openai: 16; stub: 64).",
    )
    max_queue: int = Field(
        32, ge=0, description="Requests allowed to wait; beyond it RESOURCE_EXHAUSTED."
    )
    default_max_tokens: int = Field(
        512, gt=0, description="Completion length when a request leaves max_tokens at 0."
    )
    default_temperature: float = Field(
        0.7, ge=0, le=2, description="Temperature when a request leaves it unset."
    )
    default_top_p: float = Field(
        0.95, gt=0, le=1, description="top_p when a request leaves it unset."
    )
    max_stop_sequences: int = Field(8, ge=0, description="Most stop strings one request may set.")

    # llama_cpp engine.
    model: str = Field(
        DEFAULT_MODEL,
        description="Which catalogue model the llama_cpp engine loads from the model cache, as "
        f"`make models` prepares it: {', '.join(CATALOGUE)} (docs/models.md).",
    )
    model_path: Path | None = Field(
        None,
        description="A GGUF model file of your own (llama_cpp engine); overrides "
        "MEMEX_REASONER_MODEL.",
    )
    context_length: int = Field(
        4096,
        gt=0,
        description="Context window in tokens (llama_cpp n_ctx; for openai, reported by Info "
        "when the server does not say).",
    )
    n_threads: int = Field(
        0,
        ge=0,
        description="CPU threads per llama.cpp context; 0 shares half the cores among contexts.",
    )
    n_batch: int = Field(
        256,
        gt=0,
        description="Prompt tokens evaluated per decode step; cancellation is noticed between "
        "steps, so smaller means faster cancel of long prompts.",
    )
    n_gpu_layers: int = Field(
        0, description="Layers offloaded to a GPU when llama.cpp was built with one (-1: all)."
    )
    # Off by default: on 2 cores it prefills the 1.5B model 8-12% faster, but `memex eval` over
    # the demo vault answered 33 and 34 of 48 right with it and 35 and 36 without it, the same
    # two questions lost in both runs with it (docs/models.md).
    flash_attn: bool = Field(
        False,
        description="llama.cpp's fused attention kernel: on 2 CPU cores it prefills "
        "Qwen2.5-Coder-1.5B 8-12% faster, but the default model answered 2 demo questions "
        "fewer with it in two paired runs (docs/models.md).",
    )
    prompt_cache_bytes: int = Field(
        64 * 2**20,
        ge=0,
        description="Memory for saved KV states of prompts' system messages, restored when "
        "prompts with different system messages alternate (an ask after a chat) instead of "
        "evaluating them again; least recently used dropped first; 0 turns it off (llama_cpp).",
    )
    # Off by default: on 2 CPU cores a batch of k tokens cost about 0.75 k single decode steps, and
    # prompt lookup kept only 10-24% of its drafted tokens in asks, so answers came 1.4-2.9 times
    # slower; the greedy text changed in 1 answer of 4 too (docs/models.md, bench_speculative).
    speculative: SpeculativeMode = Field(
        "none",
        description="Speculative decoding (llama_cpp): prompt-lookup drafts the next tokens from "
        "text earlier in the prompt (which answers copy from their sources) and checks a draft "
        "in one decode step. It pays only where a batch of tokens costs little more than one "
        "(a GPU, a memory-bound CPU); on 2 CPU cores it made asks slower (docs/models.md).",
    )
    speculative_draft_tokens: int = Field(
        2,
        ge=1,
        le=64,
        description="Tokens prompt lookup drafts at a time: a longer draft saves more steps when "
        "it is right and costs more when it is wrong (2 was the fastest of 2, 4 and 8 on 2 CPU "
        "cores).",
    )

    # openai engine.
    openai_base_url: str = Field(
        "", description="Base URL of the OpenAI-compatible API, e.g. http://vllm:8000/v1."
    )
    openai_api_key: SecretStr = Field(
        SecretStr(""), description="API key sent as a bearer token; never logged."
    )
    openai_model: str = Field("", description="Model name the server serves (required).")
    openai_local: bool = Field(
        False,
        description="Mark the server as local (your own machine or network). Remote by default, "
        "so sensitive items are withheld from it (SPEC B3).",
    )
    openai_structured_output: StructuredMode = Field(
        "auto",
        description="How JSON-schema output is asked for: json_schema (OpenAI, vLLM), json_object "
        "(with a schema, as llama.cpp servers take it), prompt (instructions, then validation), or "
        "auto (try them in that order and remember what the server accepts).",
    )
    openai_timeout_seconds: float = Field(
        120.0, gt=0, description="Longest a remote call may take when the caller set no deadline."
    )
    openai_connect_timeout_seconds: float = Field(
        5.0, gt=0, description="Longest wait to connect to the remote server."
    )
    openai_retries: int = Field(
        2,
        ge=0,
        le=10,
        description="Retries of a 429, 5xx or connection failure, only before the first token.",
    )

    # stub engine.
    stub_script: Path | None = Field(
        None,
        description="A JSON file of scripted responses (chunks included) replayed by the stub.",
    )
    stub_delay_ms: float = Field(
        0.0, ge=0, description="Pause between stub chunks, to imitate a model's pace."
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, name: str) -> str:
        if name not in CATALOGUE:
            raise ValueError(UnknownModel(name).message)
        return name

    @property
    def gguf_path(self) -> Path:
        """The GGUF the llama_cpp engine loads: MEMEX_REASONER_MODEL_PATH, else the catalogue
        model's file in the model cache."""
        return self.model_path or lookup(self.model).path()

    @property
    def reported_model(self) -> str:
        """The model name Info reports for llama_cpp: MEMEX_REASONER_MODEL_NAME, else the
        catalogue name, or the file name for a GGUF of your own."""
        if self.model_name:
            return self.model_name
        return self.model_path.name if self.model_path else self.model

    @model_validator(mode="after")
    def _one_engine(self) -> Self:
        """The stub never stands in for a configured model, and openai needs its server."""
        given = self.model_fields_set
        # MEMEX_REASONER_MODEL is not counted: it picks among the prepared catalogue models and is
        # often set for a whole shell, where an explicitly chosen stub must still start.
        if self.engine == "stub":
            real = sorted(
                name for name in ("model_path", "openai_base_url", "openai_model") if name in given
            )
            if real:
                names = ", ".join(f"MEMEX_REASONER_{n.upper()}" for n in real)
                raise ValueError(
                    f"MEMEX_REASONER_ENGINE=stub but a real model is configured ({names}); "
                    "choose the engine that serves it (llama_cpp or openai) or unset it"
                )
        if self.engine == "openai" and not (self.openai_base_url and self.openai_model):
            raise ValueError(
                "MEMEX_REASONER_ENGINE=openai needs MEMEX_REASONER_OPENAI_BASE_URL and "
                "MEMEX_REASONER_OPENAI_MODEL"
            )
        if self.engine != "stub" and self.stub_script is not None:
            raise ValueError(
                f"MEMEX_REASONER_STUB_SCRIPT is set but MEMEX_REASONER_ENGINE={self.engine}; "
                "set the engine to stub to replay a script"
            )
        return self

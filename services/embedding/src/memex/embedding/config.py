"""Embedding service settings (``MEMEX_EMBEDDING_...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from memex.shared.settings import ServiceSettings, default_cache_dir

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def default_model_dir() -> Path:
    """Where `make models` puts the exported default model."""
    return default_cache_dir() / "models" / DEFAULT_MODEL


class EmbeddingSettings(ServiceSettings):
    """Everything the embedding service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_EMBEDDING_")

    port: int = Field(50051, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    model_dir: Path = Field(
        default_factory=default_model_dir,
        description="Folder with model.onnx and tokenizer.json (any sentence-embedding export).",
    )
    model_id: str = Field(
        "", description="Name reported to clients; empty uses the model folder's."
    )
    device: Literal["cpu", "cuda", "auto"] = Field(
        "cpu",
        description="cpu; cuda (fails if ONNX Runtime has no CUDA provider); auto (cuda if any).",
    )
    intra_op_threads: int = Field(0, ge=0, description="ONNX Runtime threads; 0 lets it choose.")
    spin_wait: bool = Field(
        False,
        description="Let ONNX Runtime threads spin between ops. Off by default: every memex "
        "service shares the same cores, and spinning threads starve the others.",
    )
    max_tokens: int = Field(256, gt=0, le=8192, description="Longer texts are truncated.")
    pooling: Literal["mean", "cls"] = Field("mean", description="How token vectors become one.")
    normalize: bool = Field(True, description="L2-normalise the vectors.")
    query_prefix: str = Field("", description="Prepended to query texts (asymmetric models).")
    document_prefix: str = Field("", description="Prepended to document texts.")
    max_batch_texts: int = Field(32, gt=0, description="Most texts in one model batch.")
    max_wait_ms: float = Field(
        2.0, ge=0, description="How long a batch waits for more requests before it runs."
    )
    max_queue_texts: int = Field(
        4096, gt=0, description="Texts waiting beyond this are refused with RESOURCE_EXHAUSTED."
    )
    max_texts: int = Field(256, gt=0, description="Most texts one Embed call may carry.")
    max_text_chars: int = Field(20_000, gt=0, description="Longest text accepted, in characters.")

"""Embedding service settings (``MEMEX_EMBEDDING_...``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from memex.embedding.catalogue import (
    CATALOGUE,
    DEFAULT_MODEL,
    EmbeddingModel,
    UnknownModel,
    lookup,
)
from memex.embedding.engine import METADATA_FILE
from memex.shared.settings import ServiceSettings

# What a catalogue entry decides unless the environment sets it explicitly.
_FROM_CATALOGUE = ("model_dir", "max_tokens", "pooling", "query_prefix", "document_prefix")


def default_model_dir() -> Path:
    """Where `make models` puts the default catalogue model (``DEFAULT_MODEL``)."""
    return lookup(DEFAULT_MODEL).path()


class EmbeddingSettings(ServiceSettings):
    """Everything the embedding service reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_EMBEDDING_")

    port: int = Field(50051, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    model: str = Field(
        DEFAULT_MODEL,
        description=f"Catalogue model to load ({', '.join(CATALOGUE)}); it sets the model "
        "folder, pooling, prefixes and token limit unless those are set explicitly.",
    )
    model_dir: Path = Field(
        default_factory=default_model_dir,
        description="Folder with model.onnx and tokenizer.json (any sentence-embedding export); "
        "default: the catalogue model's folder in the model cache.",
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

    @field_validator("model")
    @classmethod
    def _known_model(cls, name: str) -> str:
        if name not in CATALOGUE:
            raise ValueError(UnknownModel(name).message)
        return name

    @model_validator(mode="after")
    def _catalogue_defaults(self) -> EmbeddingSettings:
        # Explicit settings win; the rest come from the chosen entry, so MEMEX_EMBEDDING_MODEL
        # alone is enough to switch models with the right pooling and prefixes.
        given = self.model_fields_set
        if "model_dir" in given:
            # A folder of a catalogue model brings that entry's pooling and prefixes: a MiniLM
            # folder must not be run with bge's CLS pooling because the default changed.
            folder_model = _catalogue_name(self.model_dir)
            if folder_model and "model" not in given:
                object.__setattr__(self, "model", folder_model)
            elif folder_model and folder_model != self.model:
                raise ValueError(
                    f"MEMEX_EMBEDDING_MODEL_DIR {self.model_dir} holds {folder_model}, but "
                    f"MEMEX_EMBEDDING_MODEL is {self.model}: set one of them, or both to the "
                    "same model"
                )
        entry: EmbeddingModel = lookup(self.model)
        values = {
            "model_dir": entry.path(),
            "max_tokens": entry.max_tokens,
            "pooling": entry.pooling,
            "query_prefix": entry.query_prefix,
            "document_prefix": entry.document_prefix,
        }
        for name in _FROM_CATALOGUE:
            if name not in given:
                object.__setattr__(self, name, values[name])
        return self


def _catalogue_name(model_dir: Path) -> str:
    """The catalogue entry whose model the folder's metadata names; empty for any other."""
    try:
        metadata = json.loads((model_dir / METADATA_FILE).read_text())
    except (OSError, ValueError):
        return ""
    model_id = metadata.get("model_id") if isinstance(metadata, dict) else None
    return next((m.name for m in CATALOGUE.values() if m.model_id == model_id), "")

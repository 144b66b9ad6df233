"""Fixtures for the embedding service's tests: the real exported model."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.embedding.config import EmbeddingSettings, default_model_dir
from memex.embedding.core import load_embedder
from memex.embedding.engine import OnnxEmbedder
from memex.testing import require


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The default model as `make models` prepares it."""
    return require(default_model_dir() / "model.onnx", "run `make models`").parent


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> OnnxEmbedder:
    """The default model, loaded once with its catalogue settings (pooling, token limit)."""
    return load_embedder(EmbeddingSettings(model_dir=model_dir))

"""Fixtures for the reasoner's tests: the real default model, and llama-cpp-python's own
OpenAI-compatible server as the remote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.reasoner.catalogue import tiny_model_path
from memex.testing import require
from memex.testing.reasoner import openai_server


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The tests' tiny model (SmolLM2-135M) as `make models` prepares it."""
    return require(tiny_model_path(), "run `make models`")


@pytest.fixture(scope="session")
def llama_server(model_path: Path) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server with the tests' model: its /v1 URL."""
    with openai_server(model_path) as base_url:
        yield base_url

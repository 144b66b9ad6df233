"""Errors particular to the embedding service."""

from __future__ import annotations

from memex.shared.errors import FailedPrecondition


class ModelNotPrepared(FailedPrecondition):
    """The model folder is missing or incomplete."""

    def __init__(self, model_dir: str, missing: str) -> None:
        super().__init__(
            f"embedding model not found: {missing} is missing in {model_dir}; "
            "run `make models` or set MEMEX_EMBEDDING_MODEL_DIR to an ONNX export"
        )

"""The ONNX embedder: shapes, normalisation, truncation, batching invariance, bad model folders."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from memex.embedding.engine import OnnxEmbedder, resolve_providers
from memex.embedding.errors import ModelNotPrepared
from memex.shared.errors import FailedPrecondition


def test_vectors_are_unit_length_and_similar_texts_are_close(embedder: OnnxEmbedder) -> None:
    result = embedder.embed(["the cat sat on the mat", "a cat was sitting on a mat", "tax forms"])
    assert np.allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-5)
    near = float(result.vectors[0] @ result.vectors[1])
    far = float(result.vectors[0] @ result.vectors[2])
    assert near > 0.7 > far


def test_a_text_embeds_the_same_alone_and_in_a_padded_batch(embedder: OnnxEmbedder) -> None:
    short = "hello"
    batch = [short, "word " * 200, "a medium sized sentence about the weather"]
    alone = embedder.embed([short]).vectors[0]
    together = embedder.embed(batch).vectors[0]
    assert float(alone @ together) > 0.99999


def test_long_texts_are_truncated_and_flagged(embedder: OnnxEmbedder) -> None:
    result = embedder.embed(["word " * 1000, "short", ""])
    assert result.truncated == [True, False, False]
    assert result.token_counts[0] == embedder.max_tokens
    assert result.token_counts[2] == 2  # [CLS] [SEP]


def test_results_keep_input_order(embedder: OnnxEmbedder) -> None:
    texts = ["z " * n for n in (50, 1, 30, 2, 80)]
    batch = embedder.embed(texts).vectors
    for i, text in enumerate(texts):
        assert float(batch[i] @ embedder.embed([text]).vectors[0]) > 0.99999


def test_a_missing_model_says_how_to_prepare_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotPrepared, match="make models"):
        OnnxEmbedder(tmp_path)


def test_cuda_without_a_cuda_runtime_is_refused_clearly() -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has a CUDA runtime")
    with pytest.raises(FailedPrecondition, match="onnxruntime-gpu"):
        resolve_providers("cuda")
    assert resolve_providers("auto") == ["CPUExecutionProvider"]

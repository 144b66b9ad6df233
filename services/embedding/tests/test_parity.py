"""The all-MiniLM-L6-v2 ONNX export matches sentence-transformers on the reference vectors (fp32).

(bge's parity with langchain4j is in test_parity_bge.py.)"""

from __future__ import annotations

import json

import numpy as np

from memex.embedding.catalogue import lookup
from memex.embedding.config import EmbeddingSettings
from memex.embedding.core import load_embedder
from memex.testing import require, shared_data


def test_every_reference_text_reaches_cosine_0_9999() -> None:
    name = "all-MiniLM-L6-v2"
    require(lookup(name).path() / "model.onnx", "run `make models`")
    embedder = load_embedder(EmbeddingSettings(model=name))
    reference = json.loads(shared_data("fixtures/minilm_reference_embeddings.json").read_text())
    texts = [item["text"] for item in reference["items"]]
    expected = np.array([item["embedding"] for item in reference["items"]], dtype=np.float32)
    assert len(texts) == 20 and "" in texts

    result = embedder.embed(texts)

    assert result.vectors.shape == (20, 384)
    cosines = (result.vectors * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.9999, f"text {worst} ({texts[worst][:40]!r}) reached {cosines[worst]}"
    # The two texts longer than 256 tokens are the truncated ones, at exactly 256 tokens.
    assert [n for n, t in zip(result.token_counts, result.truncated, strict=True) if t] == [
        256,
        256,
    ]

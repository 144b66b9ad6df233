"""Sentence embeddings with ONNX Runtime and a `tokenizers` tokenizer (no gRPC here)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Encoding

from memex.embedding.errors import ModelNotPrepared
from memex.shared import onnx_text
from memex.shared.errors import FailedPrecondition

log = logging.getLogger(__name__)

METADATA_FILE = "memex_embedding.json"


@dataclass(frozen=True)
class EmbedResult:
    """Vectors for a list of texts, in order."""

    vectors: npt.NDArray[np.float32]
    truncated: list[bool]
    token_counts: list[int]


def resolve_providers(device: Literal["cpu", "cuda", "auto"]) -> list[str]:
    """ONNX Runtime execution providers for a device setting."""
    available = ort.get_available_providers()
    cuda = "CUDAExecutionProvider" in available
    if device == "cuda" and not cuda:
        raise FailedPrecondition(
            "MEMEX_EMBEDDING_DEVICE=cuda but this ONNX Runtime has no CUDA provider "
            f"(available: {', '.join(available)}); install onnxruntime-gpu or use device=cpu"
        )
    if device in ("cuda", "auto") and cuda:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


class OnnxEmbedder:
    """Tokenises, runs the model in length-sorted batches, pools and normalises.

    Thread-safe: ONNX Runtime sessions and tokenizers may be called from several threads.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        model_id: str = "",
        max_tokens: int = 256,
        pooling: Literal["mean", "cls"] = "mean",
        normalize: bool = True,
        batch_size: int = 32,
        providers: Sequence[str] = ("CPUExecutionProvider",),
        intra_op_threads: int = 0,
        spin_wait: bool = False,
    ) -> None:
        if missing := onnx_text.missing_file(model_dir):
            raise ModelNotPrepared(str(model_dir), missing)
        metadata = _read_metadata(model_dir)
        self.model_id = model_id or str(metadata.get("model_id") or model_dir.name)
        self.max_tokens = max_tokens
        self._pooling = pooling
        self._normalize = normalize
        self._batch_size = batch_size

        self._model = onnx_text.OnnxTextModel(
            onnx_text.load_tokenizer(model_dir / onnx_text.TOKENIZER_FILE, max_tokens),
            onnx_text.open_session(
                model_dir / onnx_text.MODEL_FILE,
                providers=providers,
                intra_op_threads=intra_op_threads,
                spin_wait=spin_wait,
            ),
        )
        self.providers = self._model.session.get_providers()
        self.dimension = int(self._model.output_shape[-1])
        log.info(
            "loaded %s (%d dims, %s) from %s",
            self.model_id,
            self.dimension,
            ",".join(self.providers),
            model_dir,
        )

    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Embeds ``texts``; each gets a unit vector (when normalising) of ``dimension`` floats."""
        encodings = self._model.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Similar lengths in one batch waste little compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors[batch] = self._run([encodings[i] for i in batch])
        return EmbedResult(
            vectors=vectors,
            truncated=[bool(e.overflowing) for e in encodings],
            token_counts=[len(e.ids) for e in encodings],
        )

    def _run(self, encodings: list[Encoding]) -> npt.NDArray[np.float32]:
        hidden, mask = self._model.run(encodings)
        pooled = onnx_text.pool(hidden, mask, self._pooling)
        if self._normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        vectors: npt.NDArray[np.float32] = pooled.astype(np.float32, copy=False)
        return vectors


def _read_metadata(model_dir: Path) -> dict[str, object]:
    path = model_dir / METADATA_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return data if isinstance(data, dict) else {}

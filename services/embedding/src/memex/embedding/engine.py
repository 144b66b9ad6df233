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
from tokenizers import Encoding, Tokenizer

from memex.embedding.errors import ModelNotPrepared
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
        for name in ("model.onnx", "tokenizer.json"):
            if not (model_dir / name).is_file():
                raise ModelNotPrepared(str(model_dir), name)
        metadata = _read_metadata(model_dir)
        self.model_id = model_id or str(metadata.get("model_id") or model_dir.name)
        self.max_tokens = max_tokens
        self._pooling = pooling
        self._normalize = normalize
        self._batch_size = batch_size

        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_tokens)

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if intra_op_threads:
            options.intra_op_num_threads = intra_op_threads
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spin_wait else "0"
        )
        self._session = ort.InferenceSession(
            str(model_dir / "model.onnx"), sess_options=options, providers=list(providers)
        )
        self.providers = self._session.get_providers()
        self._inputs = {i.name for i in self._session.get_inputs()}
        output_shape = self._session.get_outputs()[0].shape
        self.dimension = int(output_shape[-1])
        log.info(
            "loaded %s (%d dims, %s) from %s",
            self.model_id,
            self.dimension,
            ",".join(self.providers),
            model_dir,
        )

    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Embeds ``texts``; each gets a unit vector (when normalising) of ``dimension`` floats."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
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
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if hidden.ndim == 2:  # the export pooled already
            pooled = hidden
        elif self._pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
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

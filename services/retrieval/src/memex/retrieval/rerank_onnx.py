"""Rerank engines on ONNX Runtime with a `tokenizers` tokenizer (no gRPC here).

* ``CrossEncoder``: a graph from (input_ids, attention_mask[, token_type_ids]) of the pair
  "query [SEP] passage" to one logit per pair.
* ``BiEncoderRescorer``: a sentence encoder (last hidden state or pooled vectors) used
  pointwise: cosine between the query's and each passage's vector, both computed now.

Both check their folder, their graph's inputs and outputs, and run one probe at startup, so a
bad configuration fails when the service starts, with a message that says what to fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.rerank import Reranker
from memex.shared import onnx_text
from memex.shared.errors import FailedPrecondition

SETTING = "MEMEX_RETRIEVAL_RERANK_MODEL_DIR"


class RerankModelError(FailedPrecondition):
    """The configured rerank model cannot be used; the message says what to fix."""


def _open_model(
    model_dir: Path, max_tokens: int, threads: int, *, pairs: bool
) -> onnx_text.OnnxTextModel:
    """The tokenizer and session of a rerank model, checked: each failure names what to fix."""
    if missing := onnx_text.missing_file(model_dir):
        raise RerankModelError(
            f"{SETTING}={model_dir} has no {missing}: put the rerank model's model.onnx "
            "and tokenizer.json there, or set MEMEX_RETRIEVAL_RERANK=off"
        )
    model_path = model_dir / onnx_text.MODEL_FILE
    tokenizer_path = model_dir / onnx_text.TOKENIZER_FILE
    # Cut the passage, never the query: the pair is only meaningful with the whole question.
    strategy: Literal["only_second", "longest_first"] = "only_second" if pairs else "longest_first"
    try:
        tokenizer = onnx_text.load_tokenizer(tokenizer_path, max_tokens, strategy=strategy)
    except Exception as exc:  # the library raises plain Exception subclasses
        raise RerankModelError(f"{tokenizer_path} is not a tokenizers JSON file: {exc}") from exc
    try:
        # Spinning threads would steal the cores the store and the embedding service need.
        session = onnx_text.open_session(model_path, intra_op_threads=threads, spin_wait=False)
    except Exception as exc:  # onnxruntime's errors have no common public base
        raise RerankModelError(f"{model_path} cannot be loaded by ONNX Runtime: {exc}") from exc
    names = [i.name for i in session.get_inputs()]
    unknown = [n for n in names if n not in onnx_text.INPUTS]
    if unknown or "input_ids" not in names:
        raise RerankModelError(
            f"{model_path} takes inputs {names}; a rerank model must take "
            f"input_ids and optionally attention_mask and token_type_ids"
        )
    return onnx_text.OnnxTextModel(tokenizer, session)


def _batched(count: int, lengths: Sequence[int], size: int) -> list[list[int]]:
    # Similar lengths in one batch waste little compute on padding.
    order = sorted(range(count), key=lambda i: lengths[i])
    return [order[s : s + size] for s in range(0, count, size)]


class CrossEncoder:
    """Scores (query, passage) pairs with a cross-encoder: one logit per pair."""

    def __init__(
        self, model_dir: Path, *, max_tokens: int = 512, batch_size: int = 16, threads: int = 0
    ) -> None:
        self.name = f"cross-encoder:{model_dir.name}"
        self._model = _open_model(model_dir, max_tokens, threads, pairs=True)
        self._batch = batch_size
        probe = self._model.run(self._model.tokenizer.encode_batch([("query", "passage")]))[0]
        if probe.size != 1:
            raise RerankModelError(
                f"{model_dir / 'model.onnx'} gives output of shape {list(probe.shape)} for one "
                "pair; a cross-encoder must give one logit per pair (shape [batch] or [batch, 1])"
            )

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage, in order."""
        if not passages:
            return []
        encodings = self._model.tokenizer.encode_batch([(query, p) for p in passages])
        scores = np.empty(len(passages), dtype=np.float64)
        for batch in _batched(len(passages), [len(e.ids) for e in encodings], self._batch):
            logits = self._model.run([encodings[i] for i in batch])[0]
            scores[batch] = logits.reshape(len(batch))
        return [float(s) for s in scores]


class BiEncoderRescorer:
    """Scores passages by cosine to the query under a (stronger) sentence encoder, pointwise:
    the passages' vectors are computed per search, nothing is stored."""

    def __init__(
        self,
        model_dir: Path,
        *,
        pooling: Literal["cls", "mean"] = "cls",
        query_prefix: str = "",
        max_tokens: int = 512,
        batch_size: int = 16,
        threads: int = 0,
    ) -> None:
        self.name = f"bi-encoder:{model_dir.name}"
        self._model = _open_model(model_dir, max_tokens, threads, pairs=False)
        self._pooling = pooling
        self._prefix = query_prefix
        self._batch = batch_size
        rank = len(self._model.output_shape)
        if rank not in (2, 3):
            raise RerankModelError(
                f"{model_dir / 'model.onnx'}'s first output has rank {rank}; "
                "a sentence encoder gives [batch, sequence, hidden] or pooled [batch, hidden]"
            )

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        encodings = self._model.tokenizer.encode_batch(list(texts))
        rows: list[npt.NDArray[Any]] = [np.empty(0)] * len(texts)
        for batch in _batched(len(texts), [len(e.ids) for e in encodings], self._batch):
            hidden, mask = self._model.run([encodings[i] for i in batch])
            pooled = onnx_text.pool(hidden, mask, self._pooling)
            for row, index in enumerate(batch):
                rows[index] = pooled[row]
        vectors = np.stack(rows).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = vectors / np.maximum(norms, 1e-12)
        return unit

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Cosine of each passage to the (prefixed) query, in order."""
        if not passages:
            return []
        vectors = self._embed([self._prefix + query, *passages])
        return [float(s) for s in vectors[1:] @ vectors[0]]


def open_reranker(settings: RetrievalSettings) -> Reranker | None:
    """The reranker the settings configure, loaded and probed; None when rerank is off."""
    s = settings
    if s.rerank == "off" or s.rerank_model_dir is None:
        return None
    if s.rerank == "cross-encoder":
        return CrossEncoder(
            s.rerank_model_dir, max_tokens=s.rerank_max_tokens, threads=s.rerank_threads
        )
    return BiEncoderRescorer(
        s.rerank_model_dir,
        pooling=s.rerank_pooling,
        query_prefix=s.rerank_query_prefix,
        max_tokens=s.rerank_max_tokens,
        threads=s.rerank_threads,
    )

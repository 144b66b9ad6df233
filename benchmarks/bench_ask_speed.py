"""Ask and chat speed on 600 real notes, the answer path of a commit against today's (issue 35).

    python benchmarks/bench_ask_speed.py                      # 600 til notes, 8 questions
    python benchmarks/bench_ask_speed.py --baseline-ref 570e7b8 -n 8

The vault: the first ``--notes`` notes of the til vault (``../shared/eval/til-vault``, real notes
by one person; never copied into the repository), the gold notes of the questions included,
written outside the checkout. One private stack (`memex up` on free ports, its own data dir) with
the default reasoner indexes it once; then each variant starts the stack again over the same
index and sends each of ``-n`` answerable questions of ``benchmarks/eval/til.jsonl`` as a
streamed ask and as a new chat, timing the first words (the first delta with text) and the end
at the client.

Variants, in this order, each on empty orchestrator state (threads and the audit log):
- ``baseline``: the answer path at ``--baseline-ref`` (default: the commit before issue 35),
  run from a git worktree by putting its sources first on ``PYTHONPATH``;
- ``default``: this checkout as it ships (a first pass that stands streams, then the whole
  briefing confirms it, unstreamed);
- ``no-confirm``: ``MEMEX_ORCHESTRATOR_ASK_CONFIRM_FIRST_PASS=false``, a first pass that stands
  is the answer;
- ``short-first``: a first pass of 1.5 s of prefill (at least 150 tokens) instead of 3.5 s;
- ``one-call``: no first pass (``ASK_FIRST_PASS_SECONDS=0``), a 700-token briefing.

Medians in seconds, and each variant's ratio to the baseline measured in the same run; 2 cores
are noisy, so compare ratios, not single figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_first_words import cli, first_words  # the same client timing, the same CLI

from memex.cli.stack.services import private_stack_env

ROOT = Path(__file__).resolve().parents[1]
TIL = ROOT.parent / "shared" / "eval" / "til-vault"
QUESTIONS = ROOT / "benchmarks" / "eval" / "til.jsonl"
BEFORE_ISSUE_35 = "570e7b8"
SOURCE_DIRS = (
    "shared/src",
    "protos",
    "gateway/src",
    *(f"services/{name}/src" for name in ("embedding", "retrieval", "reasoner", "orchestrator")),
)
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "no-confirm": {"MEMEX_ORCHESTRATOR_ASK_CONFIRM_FIRST_PASS": "false"},
    "short-first": {
        "MEMEX_ORCHESTRATOR_ASK_FIRST_PASS_SECONDS": "1.5",
        "MEMEX_ORCHESTRATOR_ASK_FIRST_PASS_MIN_TOKENS": "150",
    },
    "one-call": {
        "MEMEX_ORCHESTRATOR_ASK_FIRST_PASS_SECONDS": "0",
        "MEMEX_ORCHESTRATOR_BRIEFING_TOKENS": "700",
    },
}


def questions(count: int) -> list[tuple[str, list[str]]]:
    """The first ``count`` answerable questions of the til file, with their gold paths."""
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [(r["question"], r["gold"]) for r in rows if r["answerable"]][:count]


def build_vault(out: Path, notes: int, gold: list[str]) -> int:
    """The gold notes plus the first others in path order, ``notes`` in all."""
    paths = sorted(p.relative_to(TIL).as_posix() for p in TIL.rglob("*.md") if p.parent != TIL)
    picked = list(dict.fromkeys([*gold, *paths]))[:notes]
    for rel in picked:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TIL / rel, out / rel)
    return len(picked)


def run(env: dict[str, str], asked: list[str]) -> dict[str, float]:
    # Each variant starts on empty orchestrator state: the indexing stack has written this
    # checkout's schema, which an older baseline refuses to open.
    shutil.rmtree(Path(env["MEMEX_DATA_DIR"]) / "orchestrator", ignore_errors=True)
    cli(env, "up")
    try:
        times = asyncio.run(first_words(f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}", asked))
    finally:
        cli(env, "down")
    return {name: statistics.median(values) for name, values in times.items()}


def worktree(ref: str, where: Path) -> dict[str, str]:
    """``PYTHONPATH`` that runs every service from ``ref``'s sources."""
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), ref],
        check=True,
        capture_output=True,
    )
    return {"PYTHONPATH": os.pathsep.join(str(where / d) for d in SOURCE_DIRS)}


def main() -> None:
    """Builds the vault, indexes it once, and times every variant over it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=600, help="notes in the vault")
    parser.add_argument("-n", type=int, default=8, help="questions per variant")
    parser.add_argument("--baseline-ref", default=BEFORE_ISSUE_35, help="the commit to compare")
    args = parser.parse_args()
    if not TIL.is_dir():
        raise SystemExit(f"skipped: {TIL} is absent (the reference data beside the checkout)")
    picked = questions(args.n)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="memex-ask-speed-") as tmp:
        vault = Path(tmp) / "vault"
        count = build_vault(vault, args.notes, [g for _, gold in picked for g in gold])
        env = private_stack_env(Path(tmp) / "data", MEMEX_START_TIMEOUT_SECONDS="300")
        cli(env, "up")
        print(cli(env, "index", str(vault)).strip().splitlines()[0], file=sys.stderr)
        cli(env, "down")
        asked = [question for question, _ in picked]
        try:
            results["baseline"] = run(
                {**env, **worktree(args.baseline_ref, Path(tmp) / "base")}, asked
            )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "base")],
                check=False,
                capture_output=True,
            )
        for name, settings in VARIANTS.items():
            results[name] = run({**env, **settings}, asked)
    base = results["baseline"]
    print(f"{count} til notes, {len(asked)} questions, medians in seconds (ratio to baseline)")
    print(f"{'':<11} {'ask first':>14} {'ask end':>14} {'chat first':>14} {'chat end':>14}")
    for name, row in results.items():
        cells = [
            f"{row[key]:5.1f} ({row[key] / base[key]:.2f})"
            for key in ("ask_first", "ask_end", "chat_first", "chat_end")
        ]
        print(f"{name:<11} " + " ".join(f"{cell:>14}" for cell in cells))


if __name__ == "__main__":
    main()

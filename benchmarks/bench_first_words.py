"""Time to first words in chat and ask, on a vault of 600 real notes, with the real model.

    make bench-first-words       (or: python benchmarks/bench_first_words.py --notes 600 -n 6)

The vault: SciFact abstracts (text real people wrote; ``../shared/eval``, never copied into the
repository), one note each, written outside the checkout by ``scifact_vault.py``: the gold
documents of the eval's claims plus others up to ``--notes``. A private stack (`memex up`, free
ports, its own data dir) with the reasoner model of ``MEMEX_REASONER_MODEL`` (the catalogue's
default when unset) indexes it; then each of ``-n`` claims is sent as a new chat and as a streamed
ask, and the client times the first delta and the end.

Two runs of the same stack over the same index, so the ratio is measured, not assumed:
- ``sized``: chat sizes its sources to what the model reads in ``chat_first_words_seconds``
  (5 s) at the prefill speed the reasoner measured when it loaded;
- ``baseline``: ``MEMEX_ORCHESTRATOR_CHAT_FIRST_WORDS_SECONDS=0``, the full ``briefing_tokens``.
Ask uses ``briefing_tokens`` in both. Medians, because 2 shared cores are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from memex.orchestrator.v1 import orchestrator_pb2 as pb
from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.testing.stack import private_stack_env

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "eval" / "scifact-train"


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def claims(count: int) -> list[str]:
    """The first ``count`` claims of the eval's SciFact question file, as questions."""
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (SHARED / "queries.jsonl").read_text().splitlines())
    }
    lines = (ROOT / "benchmarks" / "eval" / "scifact-train.jsonl").read_text().splitlines()
    picked = [json.loads(line)["query_id"] for line in lines if line.strip()][:count]
    return [f"Is it true that {queries[qid].rstrip('.')}?" for qid in picked]


async def first_words(address: str, questions: list[str]) -> dict[str, list[float]]:
    """Seconds to the first delta and to the end, per chat and per streamed ask."""
    times: dict[str, list[float]] = {
        "chat_first": [],
        "chat_end": [],
        "ask_first": [],
        "ask_end": [],
    }
    async with grpc.aio.insecure_channel(address) as channel:
        stub = orchestrator_pb2_grpc.OrchestratorServiceStub(channel)
        for question in questions:
            for kind in ("chat", "ask"):
                started, first = time.perf_counter(), 0.0
                # Made only when it is timed: a grpc.aio call starts as it is created, so making
                # both up front ran the ask beside the chat and timed neither alone.
                call = (
                    stub.Chat(pb.ChatRequest(message=question), timeout=600)
                    if kind == "chat"
                    else stub.AskStream(
                        pb.AskStreamRequest(ask=pb.AskRequest(question=question)), timeout=600
                    )
                )
                async for event in call:
                    if event.WhichOneof("event") == "delta" and event.delta.strip() and not first:
                        first = time.perf_counter() - started
                end = time.perf_counter() - started
                times[f"{kind}_first"].append(first or end)
                times[f"{kind}_end"].append(end)
    return times


def run(env: dict[str, str], questions: list[str]) -> dict[str, float]:
    cli(env, "up")
    try:
        address = f"127.0.0.1:{env['MEMEX_ORCHESTRATOR_PORT']}"
        times = asyncio.run(first_words(address, questions))
    finally:
        cli(env, "down")
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    """Builds the vault, indexes it once, and times the two runs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=600, help="notes in the vault")
    parser.add_argument("-n", type=int, default=6, help="questions per run")
    args = parser.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"skipped: {SHARED} is absent (the reference data beside the checkout)")
    with tempfile.TemporaryDirectory(prefix="memex-first-words-") as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "scifact_vault.py"),
                "--out",
                str(vault),
                "--sample",
                str(args.notes),
            ],
            check=True,
            capture_output=True,
        )
        notes = sorted(vault.glob("*.md"))
        for extra in notes[args.notes :]:
            extra.unlink()  # gold documents plus others, trimmed to exactly --notes
        env = private_stack_env(Path(tmp) / "data", MEMEX_START_TIMEOUT_SECONDS="300")
        cli(env, "up")
        print(cli(env, "index", str(vault)).strip().splitlines()[0], file=sys.stderr)
        cli(env, "down")
        questions = claims(args.n)
        sized = run(env, questions)
        baseline = run({**env, "MEMEX_ORCHESTRATOR_CHAT_FIRST_WORDS_SECONDS": "0"}, questions)
    print(f"{min(args.notes, len(notes))} notes, {len(questions)} questions, medians in seconds")
    print(f"{'':<10} {'chat first':>10} {'chat end':>9} {'ask first':>10} {'ask end':>8}")
    for name, row in (("sized", sized), ("baseline", baseline)):
        print(
            f"{name:<10} {row['chat_first']:>10.1f} {row['chat_end']:>9.1f} "
            f"{row['ask_first']:>10.1f} {row['ask_end']:>8.1f}"
        )
    print(f"chat first words, sized / baseline: {sized['chat_first'] / baseline['chat_first']:.2f}")


if __name__ == "__main__":
    main()

"""Speculative decoding (prompt lookup) against none, the default model, in one run.

    .venv/bin/python benchmarks/bench_speculative.py                  (3-4 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_speculative.py --draft-tokens 4 2 8 --rounds 2 --threads 1

An ask as the orchestrator builds it: the default (ask) persona's system prompt and answer rules,
then six numbered excerpts of real Markdown notes (git/ and postgres/ notes of the TIL vault in
../shared/eval/til-vault, read now), the date and a question whose answer copies a command from
one of them. Every question is answered greedily (temperature 0, as asks are) by the engine with
``speculative="none"`` and by one with ``"prompt-lookup"`` for each ``--draft-tokens`` (the
first is the engine's own; the others swap its draft model), the order rotating per question so
a busy machine's drift hits all alike. Before each answer a context is cut back to the prompt's
shared start (system message and sources), so every variant evaluates the same question tail:
the time to first token is that tail's, not a cold prompt's (prefill runs the same code with or
without speculation, logits of the last token only).

Per variant it prints medians of: time from request to last token, decode tokens/s (after the
first token), time to first token, tokens per decode step, the drafts' acceptance, and the
median of the paired ratios against none on the same question and round; then whether every
answer's text equals none's.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from llama_cpp.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding

from memex.orchestrator.answer.briefing import ANSWER_RULES, system_prompt, today_line
from memex.orchestrator.turn.persona import load_personas
from memex.reasoner.config import ReasonerSettings
from memex.reasoner.engine import ChatMessage, Delta, Finished, GenerationRequest, Sampling
from memex.reasoner.llama_engine import LlamaCppEngine
from memex.reasoner.speculative import LOOKUP_NGRAM

VAULT = Path(__file__).resolve().parents[2] / "shared" / "eval" / "til-vault"
NOTES = (
    "git/cherry-pick-a-range-of-commits.md",
    "postgres/dump-and-restore-a-database.md",
    "git/clean-up-old-remote-tracking-references.md",
    "postgres/create-an-index-without-locking-the-table.md",
    "git/delete-all-untracked-files.md",
    "postgres/export-query-results-to-a-csv.md",
)
QUESTIONS = (
    "What command cherry-picks commits B through D onto my branch, B included?",
    "How do I dump my_database in Postgres's custom format?",
    "How do I create the books isbn index without locking the table?",
    "Which git command deletes every untracked file, directories included?",
)
TODAY = dt.date(2026, 12, 4)  # fixed, so every run sees the same prompts
EXCERPT_CHARS = 800  # the orchestrator's lead_excerpt_chars; its briefing is ~1000 tokens


class Counted(LlamaDraftModel):
    """A draft model that counts its calls (one per decode step after the first token) and the
    tokens it drafted."""

    def __init__(self, inner: LlamaDraftModel) -> None:
        self.inner = inner
        self.calls = 0
        self.drafted = 0

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        draft = self.inner(input_ids, **kwargs)
        self.calls += 1
        self.drafted += len(draft)
        return draft


@dataclass
class Run:
    """One answer, timed from the request."""

    question: int
    text: str
    ttft_s: float
    total_s: float
    tokens: int
    steps: int
    drafted: int

    @property
    def rate(self) -> float:
        """Decode tokens/s after the first token."""
        decode = self.total_s - self.ttft_s
        return (self.tokens - 1) / decode if decode > 0 and self.tokens > 1 else 0.0

    @property
    def accepted(self) -> int:
        """Drafted tokens kept: each decode step yields one token of its own besides them."""
        return max(0, self.tokens - self.steps)


@dataclass
class Variant:
    """One way of decoding: an engine and the draft model its context decodes with."""

    name: str
    engine: LlamaCppEngine
    draft: Counted | None
    runs: list[Run] = field(default_factory=list)


def excerpt(text: str, cap: int = EXCERPT_CHARS) -> str:
    """The note's first paragraphs (code blocks whole) within ``cap`` characters."""
    kept: list[str] = []
    for paragraph in text.strip().split("\n\n"):
        if kept and len("\n\n".join([*kept, paragraph])) > cap:
            break
        kept.append(paragraph)
    return "\n\n".join(kept)


def messages(notes: Sequence[tuple[str, str]], question: str) -> tuple[ChatMessage, ...]:
    """The ask's two messages, as ``memex.orchestrator.answer.briefing.answer_messages``
    lays them out (a note's source header is its file name, as memex titles these notes)."""
    persona = load_personas().get("", "ask")
    sources = "\n\n".join(f"[{n}] {name}\n{text}" for n, (name, text) in enumerate(notes, 1))
    return (
        ChatMessage("system", system_prompt(persona, ANSWER_RULES)),
        ChatMessage("user", f"Sources:\n\n{sources}\n\n{today_line(TODAY)}\nQuestion: {question}"),
    )


def shared_start(engine: LlamaCppEngine, prompts: Sequence[Sequence[ChatMessage]]) -> int:
    """How many tokens all the prompts start with."""
    llm = engine._llamas[0]
    token_lists = [engine._prompt_tokens(llm, p)[0] for p in prompts]
    n = 0
    while all(len(t) > n and t[n] == token_lists[0][n] for t in token_lists):
        n += 1
    return n


async def answer(
    variant: Variant, prompt: Sequence[ChatMessage], max_tokens: int, start: int, question: int
) -> Run:
    """One greedy answer from ``variant``, its context first cut back to ``start`` tokens."""
    llm = variant.engine._llamas[0]  # one context per engine (contexts=1)
    llm.n_tokens = min(llm.n_tokens, start)
    if variant.draft is not None:  # the engine was built with a draft model: swap in this one
        llm.draft_model = variant.draft
    calls = variant.draft.calls if variant.draft else 0
    drafted = variant.draft.drafted if variant.draft else 0
    request = GenerationRequest(
        messages=tuple(prompt),
        sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=max_tokens, seed=1),
    )
    pieces: list[str] = []
    started = time.perf_counter()
    first = 0.0
    tokens = 0
    async for event in variant.engine.generate(request):
        if isinstance(event, Delta):
            first = first or time.perf_counter()
            pieces.append(event.text)
        elif isinstance(event, Finished):
            tokens = event.completion_tokens
    total = time.perf_counter() - started
    if variant.draft is None:
        steps, drafted = tokens, 0
    else:
        steps = 1 + variant.draft.calls - calls  # the first token needs no draft
        drafted = variant.draft.drafted - drafted
    return Run(question, "".join(pieces), first - started, total, tokens, steps, drafted)


def report(variants: Sequence[Variant]) -> None:
    base = variants[0].runs
    print(
        f"\n  {'variant':<22}{'total s':>9}{'decode tok/s':>14}{'TTFT s':>8}{'tokens':>8}"
        f"{'tok/step':>10}{'accepted':>10}{'ratio total':>13}{'ratio tok/s':>13}"
    )
    for v in variants:
        drafted = sum(r.drafted for r in v.runs)
        accepted = sum(r.accepted for r in v.runs) / drafted if drafted else 0.0
        total_ratio = statistics.median(
            r.total_s / b.total_s for r, b in zip(v.runs, base, strict=True)
        )
        rate_ratio = statistics.median(
            r.rate / b.rate for r, b in zip(v.runs, base, strict=True) if b.rate
        )
        print(
            f"  {v.name:<22}{statistics.median(r.total_s for r in v.runs):>9.2f}"
            f"{statistics.median(r.rate for r in v.runs):>14.1f}"
            f"{statistics.median(r.ttft_s for r in v.runs):>8.2f}"
            f"{statistics.median(r.tokens for r in v.runs):>8.0f}"
            f"{statistics.median(r.tokens / r.steps for r in v.runs):>10.2f}"
            f"{(f'{accepted:.0%}' if drafted else '-'):>10}"
            f"{total_ratio:>13.2f}{rate_ratio:>13.2f}"
        )
    print("\n  greedy text against none, per answer:")
    for v in variants[1:]:
        same = sum(r.text == b.text for r, b in zip(v.runs, base, strict=True))
        print(f"  {v.name:<22}{same}/{len(base)} identical")
        for r, b in zip(v.runs, base, strict=True):
            if r.text != b.text:
                print(f"    question {r.question + 1}:")
                print(f"      none: {b.text!r}\n      this: {r.text!r}")


async def run(
    args: argparse.Namespace,
    extra: Callable[[LlamaCppEngine], Sequence[Variant]] = lambda spec: (),
) -> int:
    """Loads the engines, answers every question with every variant, prints the comparison.
    ``extra(spec)`` gives more variants to compare: other draft models for the prompt-lookup
    engine ``spec`` (its contexts decode with whatever draft model a variant swaps in)."""
    model = ReasonerSettings().gguf_path  # MEMEX_REASONER_MODEL picks a catalogue model
    if not model.is_file():
        print(f"{model} is missing: run `make models`")
        return 1
    if not args.vault.is_dir():
        print(f"skipped: the notes vault {args.vault} is not there (give --vault DIR)")
        return 0
    notes = [(Path(n).stem, excerpt((args.vault / n).read_text(encoding="utf-8"))) for n in NOTES]
    prompts = [messages(notes, q) for q in QUESTIONS[: args.questions]]
    options: dict[str, Any] = {"contexts": 1, "context_length": 4096, "n_threads": args.threads}
    base = await asyncio.to_thread(LlamaCppEngine, model, **options)
    spec = await asyncio.to_thread(
        LlamaCppEngine,
        model,
        speculative="prompt-lookup",
        draft_tokens=args.draft_tokens[0],
        **options,
    )
    try:
        variants = [Variant("none", base, None)] + [
            Variant(
                f"prompt-lookup {n}",
                spec,
                Counted(LlamaPromptLookupDecoding(max_ngram_size=args.ngram, num_pred_tokens=n)),
            )
            for n in args.draft_tokens
        ]
        more = list(extra(spec))
        variants += more
        start = shared_start(base, prompts)
        print(
            f"speculative decoding: {model.name}, {os.cpu_count()} CPUs, "
            f"{base._llamas[0].n_threads} thread(s), load {os.getloadavg()[0]:.1f}; "
            f"prompts of {base.count_tokens(prompts[0])} tokens ({start} shared), "
            f"{len(prompts)} questions x {args.rounds} rounds, max_tokens {args.max_tokens}, "
            f"temperature 0, lookup n-gram {args.ngram}"
        )
        # Warm-up: each context evaluates the shared start once (not timed).
        for engine in dict.fromkeys(v.engine for v in variants):
            await answer(Variant("warm-up", engine, None), prompts[0], 1, 0, 0)
        for variant in more:  # draft models may have contexts of their own to fill
            await answer(variant, prompts[0], 2, start, 0)
        for r in range(args.rounds):
            for q, prompt in enumerate(prompts):
                shift = (r * len(prompts) + q) % len(variants)
                for v in variants[shift:] + variants[:shift]:
                    v.runs.append(await answer(v, prompt, args.max_tokens, start, q))
        for v in variants:  # in question order, so runs pair up across variants
            v.runs.sort(key=lambda x: x.question)
        report(variants)
        print(f"\n  load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        await asyncio.to_thread(base.close)
        await asyncio.to_thread(spec.close)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--draft-tokens",
        type=int,
        nargs="+",
        default=list(dict.fromkeys([ReasonerSettings().speculative_draft_tokens, 2, 4, 8])),
        help="prompt-lookup draft lengths to compare (default: the setting's default, 2, 4, 8)",
    )
    p.add_argument("--ngram", type=int, default=LOOKUP_NGRAM, help="lookup n-gram size")
    p.add_argument("--questions", type=int, default=len(QUESTIONS), choices=range(1, 5))
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=200, help="the orchestrator's ask budget")
    p.add_argument(
        "--threads", type=int, default=0, help="llama.cpp threads (0: the engine's default)"
    )
    p.add_argument("--vault", type=Path, default=VAULT, help="the TIL vault (git/, postgres/)")
    return p


if __name__ == "__main__":
    sys.exit(asyncio.run(run(parser().parse_args())))

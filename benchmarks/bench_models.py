"""The catalogue models here: prefill and decode speed, peak memory, and the prompt cache.

    python benchmarks/bench_models.py speed MODEL [--threads 1 2] [--runs 3] [--flash-attn off on]
    python benchmarks/bench_models.py cache MODEL [--rounds 3]

``speed``: a ~600-token prompt evaluated from an empty context (prefill tokens/s), then 64 greedy
tokens (decode tokens/s), for each thread count and attention kernel (``--flash-attn off on``
runs both, interleaved, and prints on/off ratios); medians of ``--runs``, and this process's
peak RSS (the mmapped weights count as they are touched). One model per process, so the RSS is
its own.

``cache``: time to first token through the engine for prompts of a ~150-token system message and a
~600-token user message, two system messages alternating (an ask, then a chat, ...), with the
prompt cache on and off (each prompt to both, paired). The first prompt of each system message is
left out; the medians of the rest and of the paired on/off ratios are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import time

import llama_cpp

from memex.reasoner.catalogue import CATALOGUE, lookup
from memex.reasoner.engine import ChatMessage, Delta, GenerationRequest, Sampling
from memex.reasoner.llama_engine import LlamaCppEngine

TEXT = (
    "the tenant wrote to Graham about the deposit after the flat inspection found a cracked tile "
    "in the kitchen and a stain on the bedroom carpet which the letting agent had photographed "
    "before the move so the notes record every call email and receipt with dates and amounts "
)
WORDS = TEXT.split()


def text_of(llm: llama_cpp.Llama, tokens: int, salt: int = 0) -> str:
    """English-like text that tokenizes to about ``tokens`` tokens with ``llm``'s tokenizer."""
    words = [f"{WORDS[(i * 7 + salt) % len(WORDS)]}" for i in range(tokens * 2)]
    text = ""
    for n in range(tokens // 2, len(words)):
        text = " ".join(words[:n])
        if len(llm.tokenize(text.encode(), add_bos=False)) >= tokens:
            break
    return text


def _speed_once(path: str, threads: int, flash_attn: bool) -> tuple[float, float]:
    """Prefill and decode tokens/s of one ~600-token prompt and 64 greedy tokens."""
    llm = llama_cpp.Llama(
        path, n_ctx=2048, n_batch=256, n_ubatch=256, n_threads=threads, n_threads_batch=threads,
        flash_attn=flash_attn, verbose=False,
    )  # fmt: skip
    prompt = llm.tokenize(text_of(llm, 600).encode(), add_bos=True)
    # A freshly loaded model's first batch runs ~25% slower (docs/models.md): warm it untimed.
    llm.eval(prompt[:64])
    llm.reset()  # type: ignore[no-untyped-call]
    start = time.perf_counter()
    steps = llm.generate(prompt, temp=0.0, top_k=1)
    next(steps)
    first = time.perf_counter()
    for _ in range(63):
        next(steps)
    end = time.perf_counter()
    steps.close()
    llm.close()
    return len(prompt) / (first - start), 63 / (end - first)


def speed(model: str, threads: list[int], runs: int, flash: list[bool]) -> None:
    path = str(lookup(model).path())
    for n in threads:
        # Rounds interleave the kernels, so a noisy moment hits both alike.
        runs_by_kernel: dict[bool, list[tuple[float, float]]] = {kernel: [] for kernel in flash}
        for _ in range(runs):
            for kernel in flash:
                runs_by_kernel[kernel].append(_speed_once(path, n, kernel))
        medians = {}
        for kernel, pairs in runs_by_kernel.items():
            prefill = statistics.median(p for p, _ in pairs)
            decode = statistics.median(d for _, d in pairs)
            medians[kernel] = (prefill, decode)
            each = ", ".join(f"{p:.0f}/{d:.1f}" for p, d in pairs)
            print(
                f"{model}\tthreads {n}\tflash_attn {'on' if kernel else 'off'}\tprefill "
                f"{prefill:.0f} tok/s\tdecode {decode:.1f} tok/s\t(runs: {each})"
            )
        if len(medians) == 2:
            print(
                f"{model}\tthreads {n}\tflash_attn on/off\tprefill "
                f"{medians[True][0] / medians[False][0]:.2f}\tdecode "
                f"{medians[True][1] / medians[False][1]:.2f}"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{model}\tpeak RSS {rss:.0f} MiB\tload {os.getloadavg()[0]:.2f}")


async def first_token(engine: LlamaCppEngine, request: GenerationRequest) -> float:
    start = time.perf_counter()
    async for event in engine.generate(request):
        if isinstance(event, Delta):
            return time.perf_counter() - start
    return time.perf_counter() - start


def cache(model: str, rounds: int) -> None:
    path = lookup(model).path()
    # Both engines load the same mmapped weights; each prompt goes to both, in alternating order,
    # so the machine's noise hits them alike (a paired comparison).
    engines = {
        label: LlamaCppEngine(path, context_length=2048, prompt_cache_bytes=capacity)
        for label, capacity in (("on", 64 * 2**20), ("off", 0))
    }
    llm = engines["on"]._llamas[0]
    systems = [text_of(llm, 150, salt) for salt in (1, 2)]
    times: dict[str, list[float]] = {"on": [], "off": []}
    for n in range(2 * rounds + 2):
        messages = (
            ChatMessage("system", systems[n % 2]),
            ChatMessage("user", text_of(llm, 600, salt=n + 3)),
        )
        request = GenerationRequest(
            messages=messages, sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=1)
        )
        for label in ("on", "off") if n % 2 else ("off", "on"):
            seconds = asyncio.run(first_token(engines[label], request))
            if n >= 2:  # the first prompt of each system message is cold either way
                times[label].append(seconds)
    prompt = engines["on"].count_tokens(messages)
    for label, engine in engines.items():
        print(
            f"{model}\tcache {label}\tprompt {prompt} tokens\tTTFT median "
            f"{statistics.median(times[label]) * 1000:.0f} ms\t(runs: "
            f"{', '.join(f'{t * 1000:.0f}' for t in times[label])})\thits "
            f"{engine.prompt_cache_hits}, restored {engine.prompt_cache_tokens} tokens, "
            f"prefilled {engine.prefilled_tokens} tokens"
        )
        engine.close()
    ratios = [a / b for a, b in zip(times["on"], times["off"], strict=True)]
    print(
        f"{model}\tTTFT on/off paired median {statistics.median(ratios):.2f}"
        f"\tload {os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("what", choices=["speed", "cache"])
    parser.add_argument("model", choices=list(CATALOGUE))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--flash-attn", choices=["off", "on"], nargs="+", default=["off"],
        help="attention kernels to time (both: interleaved, with on/off ratios)",
    )  # fmt: skip
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.what == "speed":
        speed(args.model, args.threads, args.runs, [kernel == "on" for kernel in args.flash_attn])
    else:
        cache(args.model, args.rounds)


if __name__ == "__main__":
    main()

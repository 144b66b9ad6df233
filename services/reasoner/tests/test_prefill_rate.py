"""The prefill speed the reasoner measures as it loads, which sizes an ask's first pass."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from memex.reasoner.engine import ChatMessage, GenerationRequest, Sampling
from memex.reasoner.llama_engine import LlamaCppEngine
from memex.reasoner.llama_model import PREFILL_TIMINGS, _prefill_rate


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TimedModel:
    """Evaluates each batch in the next of ``seconds``, on ``clock``."""

    def __init__(self, clock: Clock, seconds: list[float]) -> None:
        self._clock = clock
        self._seconds = iter(seconds)
        self.n_tokens = 0
        self.evaluated: list[int] = []

    def tokenize(self, text: bytes, add_bos: bool) -> list[int]:
        return list(range(len(text.split())))

    def eval(self, tokens: list[int]) -> None:
        self._clock.now += next(self._seconds)
        self.n_tokens += len(tokens)
        self.evaluated.append(len(tokens))


def test_the_rate_is_the_fastest_timing_after_an_untimed_warm_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(time, "perf_counter", clock)
    # The warm-up is the fastest here only to show it is not counted.
    model = TimedModel(clock, [0.5, 4.0, 2.0])
    rate = _prefill_rate(model, n_batch=64)  # type: ignore[arg-type]
    assert model.evaluated == [64] * (PREFILL_TIMINGS + 1)
    assert rate == 32.0  # 64 tokens in 2.0 s, not in the warm-up's 0.5
    assert model.n_tokens == 0  # the KV cache starts empty for real prompts


@pytest.mark.slow
def test_a_real_prompt_faster_than_the_speed_measured_at_load_raises_it(model_path: Path) -> None:
    engine = LlamaCppEngine(model_path, context_length=512)
    try:
        # As if the stack's other services had held the cores while this one loaded.
        engine.info = dataclasses.replace(engine.info, prefill_tokens_per_second=1.0)
        generate(engine, "Say hello.")  # too short to time
        assert engine.info.prefill_tokens_per_second == 1.0
        generate(engine, "Summarise these notes: " + "the boiler was fixed on Tuesday. " * 40)
        assert engine.info.prefill_tokens_per_second > 1.0
    finally:
        engine.close()


def generate(engine: LlamaCppEngine, text: str) -> None:
    request = GenerationRequest(
        messages=(ChatMessage("user", text),),
        sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=2, seed=1),
    )

    async def run() -> None:
        async for _ in engine.generate(request):
            pass

    asyncio.run(run())

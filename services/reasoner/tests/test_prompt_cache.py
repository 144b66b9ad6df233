"""The prompt cache with the tests' real model: alternating system messages are restored, not
evaluated again, and the replies are the same as without the cache."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.reasoner.engine import ChatMessage, Delta, GenerationRequest, Sampling
from memex.reasoner.llama_engine import LlamaCppEngine
from memex.reasoner.prompt_cache import PrefixStates

pytestmark = pytest.mark.slow

SYSTEMS = (
    "You are a careful assistant for a personal notes vault. Answer only from the notes given, "
    "cite each note you use, and say so plainly when the notes do not answer the question.",
    "You are a friendly chat companion. Keep replies short, warm and plain; never invent facts "
    "about the user, and ask one question back when the user seems unsure what they want.",
)
QUESTIONS = ("What is tea?", "Name a colour.", "What is a vault?", "Say hello.")


def request(system: str, question: str) -> GenerationRequest:
    return GenerationRequest(
        messages=(ChatMessage("system", system), ChatMessage("user", question)),
        sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=12, seed=1),
    )


def reply(engine: LlamaCppEngine, req: GenerationRequest) -> str:
    async def run() -> str:
        return "".join([e.text async for e in engine.generate(req) if isinstance(e, Delta)])

    return asyncio.run(run())


@pytest.fixture(scope="module")
def engines(model_path: Path) -> Iterator[tuple[LlamaCppEngine, LlamaCppEngine]]:
    """The same model with the prompt cache on and off."""
    cached = LlamaCppEngine(model_path, context_length=512, prompt_cache_bytes=64 * 2**20)
    plain = LlamaCppEngine(model_path, context_length=512, prompt_cache_bytes=0)
    try:
        yield cached, plain
    finally:
        cached.close()
        plain.close()


def test_alternating_system_messages_are_restored_with_the_same_replies(
    engines: tuple[LlamaCppEngine, LlamaCppEngine],
) -> None:
    cached, plain = engines
    requests = [request(SYSTEMS[n % 2], q) for n, q in enumerate(QUESTIONS)]
    with_cache = [reply(cached, r) for r in requests]
    without = [reply(plain, r) for r in requests]
    assert with_cache == without
    assert all(with_cache)
    # The first two prompts save their system message; the next two restore it.
    assert len(cached.prompt_cache) == 2
    assert cached.prompt_cache_hits == 2
    system_tokens = [
        cached.count_tokens([ChatMessage("system", s), ChatMessage("user", "x")]) for s in SYSTEMS
    ]
    assert cached.prompt_cache_tokens > 0.8 * sum(system_tokens)
    # Without the cache each switch keeps only the start the two prompts share in the KV cache.
    first, second = (cached._prompt_tokens(cached._llamas[0], r.messages)[0] for r in requests[:2])
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    saved = plain.prefilled_tokens - cached.prefilled_tokens
    assert saved == cached.prompt_cache_tokens - 2 * shared > 0
    assert plain.prompt_cache_hits == 0


def test_the_prompt_cache_keeps_the_longest_prefix_within_its_bytes() -> None:
    states = PrefixStates(capacity=10)
    states.put((1, 2), b"aaaa")
    states.put((1, 2, 3), b"bbbb")
    assert states.longest([1, 2, 3, 4], shorter_than=4) == ((1, 2, 3), b"bbbb")
    assert states.longest([1, 2, 3], shorter_than=3) == ((1, 2), b"aaaa")  # one token left over
    assert states.longest([2, 1, 3], shorter_than=3) is None
    states.put((7,), b"cccc")  # over 10 bytes: the least recently used, (1, 2, 3), goes
    assert (1, 2, 3) not in states
    assert (states.size, len(states)) == (8, 2)
    states.put((9,), b"x" * 11)  # larger than the whole cache: not kept
    assert (9,) not in states

"""The reasoner's Prometheus metrics, labelled by engine and model (both low-cardinality)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from memex.reasoner.engine import Finished

_LABELS = ["engine", "model"]
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

TTFT = Histogram(
    "memex_reasoner_time_to_first_token_seconds",
    "From a Generate call's arrival (queue wait included) to its first text.",
    _LABELS,
    buckets=_SECONDS,
)
TOKENS_PER_SECOND = Histogram(
    "memex_reasoner_tokens_per_second",
    "Completion tokens per second of decoding, per generation (after the first token).",
    _LABELS,
    buckets=(1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000),
)
QUEUE_WAIT = Histogram(
    "memex_reasoner_queue_wait_seconds",
    "Time a Generate call waited for a generation slot.",
    _LABELS,
    buckets=(0.0005, 0.001, 0.005, *_SECONDS),
)
ACTIVE = Gauge("memex_reasoner_active_streams", "Generations running now.", _LABELS)
PROMPT_TOKENS = Counter("memex_reasoner_prompt_tokens_total", "Prompt tokens processed.", _LABELS)
COMPLETION_TOKENS = Counter(
    "memex_reasoner_completion_tokens_total", "Completion tokens generated.", _LABELS
)
PREFILL_TOKENS = Counter(
    "memex_reasoner_prefill_tokens_total",
    "Prompt tokens evaluated (llama_cpp): those neither in the KV cache nor in the prompt cache.",
    _LABELS,
)
PROMPT_CACHE_HITS = Counter(
    "memex_reasoner_prompt_cache_hits_total",
    "Prompts whose start was restored from a saved state (llama_cpp prompt cache).",
    _LABELS,
)
PROMPT_CACHE_TOKENS = Counter(
    "memex_reasoner_prompt_cache_tokens_total",
    "Prompt tokens restored from saved states instead of being evaluated (llama_cpp).",
    _LABELS,
)
GENERATIONS = Counter(
    "memex_reasoner_generations_total",
    "Generations that ran to an end, by finish reason.",
    [*_LABELS, "finish_reason"],
)


class Metrics:
    """The metric children of one engine and model."""

    def __init__(self, engine: str, model: str) -> None:
        self._labels = (engine, model)
        self.ttft = TTFT.labels(engine, model)
        self.queue_wait = QUEUE_WAIT.labels(engine, model)
        self.active = ACTIVE.labels(engine, model)
        self._rate = TOKENS_PER_SECOND.labels(engine, model)
        self._prompt = PROMPT_TOKENS.labels(engine, model)
        self._completion = COMPLETION_TOKENS.labels(engine, model)

    def record(self, finished: Finished, decode_seconds: float) -> None:
        """Counts a finished generation's tokens and its decode rate."""
        self._prompt.inc(finished.prompt_tokens)
        self._completion.inc(finished.completion_tokens)
        GENERATIONS.labels(*self._labels, finished.finish_reason).inc()
        if finished.completion_tokens > 1 and decode_seconds > 0:
            self._rate.observe((finished.completion_tokens - 1) / decode_seconds)

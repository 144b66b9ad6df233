"""The reasoner's domain logic: checking requests, scheduling, timing, metrics (no gRPC here)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.engine import (
    ChatMessage,
    Delta,
    Engine,
    EngineInfo,
    Finished,
    FinishReason,
    GenerationRequest,
    Role,
    Sampling,
)
from memex.reasoner.metrics import Metrics
from memex.reasoner.scheduler import Scheduler
from memex.reasoner.schema import parse_schema, validate_output
from memex.shared.errors import InvalidArgument, NotFound

# No tokenizer puts more characters than this in one token: a longer prompt cannot fit, and is
# refused before it costs a tokenization.
MAX_CHARS_PER_TOKEN = 32
MAX_STOP_CHARS = 64


@dataclass(frozen=True)
class RawRequest:
    """A Generate request as it arrived, before any checks (the servicer fills it)."""

    messages: Sequence[tuple[Role | None, str]]
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 0
    stop: Sequence[str] = ()
    seed: int | None = None
    json_schema: str = ""
    model: str = ""
    request_id: str = ""
    deadline: float | None = None


@dataclass(frozen=True)
class Summary:
    """The end of a stream: why it ended, what it cost, how long it took."""

    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    time_to_first_token_ms: float
    total_ms: float
    queue_wait_ms: float
    model: str


class ReasonerCore:
    """Checks requests, queues them fairly, and streams them through the engine."""

    def __init__(self, settings: ReasonerSettings, engine: Engine, max_active: int) -> None:
        self._settings = settings
        self.engine = engine
        self.scheduler = Scheduler(max_active, settings.max_queue)
        self._metrics = Metrics(engine.info.engine, engine.info.model)

    @property
    def info(self) -> EngineInfo:
        """The engine, the model, the context length, local or remote."""
        return self.engine.info

    def check(self, raw: RawRequest) -> GenerationRequest:
        """The request with defaults applied; InvalidArgument or NotFound says what to fix."""
        info, settings = self.engine.info, self._settings
        if raw.model and raw.model not in info.aliases:
            raise NotFound(
                f"model {raw.model!r} is not served here; this reasoner serves {info.model!r} "
                f"({info.engine}); leave model empty to use it"
            )
        if not raw.messages:
            raise InvalidArgument("messages is empty: send at least one user message")
        messages = []
        for index, (role, content) in enumerate(raw.messages):
            if role is None:
                raise InvalidArgument(
                    f"messages[{index}].role is unspecified; use ROLE_SYSTEM, ROLE_USER or "
                    "ROLE_ASSISTANT"
                )
            messages.append(ChatMessage(role, content))
        chars = sum(len(m.content) for m in messages)
        if chars > info.context_length * MAX_CHARS_PER_TOKEN:
            raise InvalidArgument(
                f"the prompt is {chars} characters, which cannot fit the context of "
                f"{info.context_length} tokens; shorten the messages"
            )
        temperature = _ranged(
            "temperature", raw.temperature, settings.default_temperature, 0.0, 2.0, low_open=False
        )
        top_p = _ranged("top_p", raw.top_p, settings.default_top_p, 0.0, 1.0, low_open=True)
        if raw.max_tokens < 0 or raw.max_tokens >= info.context_length:
            raise InvalidArgument(
                f"sampling.max_tokens is {raw.max_tokens}; use 0 for the default "
                f"({settings.default_max_tokens}) or up to {info.context_length - 1}"
            )
        if len(raw.stop) > settings.max_stop_sequences:
            raise InvalidArgument(
                f"sampling.stop has {len(raw.stop)} strings, the limit is "
                f"{settings.max_stop_sequences}"
            )
        for index, stop in enumerate(raw.stop):
            if not stop or len(stop) > MAX_STOP_CHARS:
                raise InvalidArgument(
                    f"sampling.stop[{index}] must be 1 to {MAX_STOP_CHARS} characters"
                )
        sampling = Sampling(
            temperature=temperature,
            top_p=top_p,
            max_tokens=raw.max_tokens or min(settings.default_max_tokens, info.context_length - 1),
            max_tokens_requested=raw.max_tokens > 0,
            stop=tuple(raw.stop),
            seed=raw.seed,
        )
        return GenerationRequest(
            messages=tuple(messages),
            sampling=sampling,
            json_schema=parse_schema(raw.json_schema),
            request_id=raw.request_id,
            deadline=raw.deadline,
        )

    async def generate(self, raw: RawRequest) -> AsyncGenerator[Delta | Summary, None]:
        """Streams text deltas, then one Summary. Checks happen before the first item."""
        request = self.check(raw)
        metrics = self._metrics
        started = time.perf_counter()
        first: float | None = None
        finished: Finished | None = None
        text: list[str] = []
        async with self.scheduler.slot() as waited:
            metrics.queue_wait.observe(waited)
            with metrics.active.track_inprogress():
                # The engine's stream is closed before the slot is released, whatever happens.
                async with contextlib.aclosing(self.engine.generate(request)) as events:
                    async for event in events:
                        if isinstance(event, Finished):
                            finished = event
                            break
                        if first is None:
                            first = time.perf_counter()
                            metrics.ttft.observe(first - started)
                        if request.json_schema is not None:
                            text.append(event.text)
                        yield event
        if finished is None:
            raise RuntimeError("the engine ended its stream without a Finished event")
        ended = time.perf_counter()
        metrics.record(finished, ended - (first or ended))
        if request.json_schema is not None and finished.finish_reason == "stop":
            validate_output("".join(text), request.json_schema)
        yield Summary(
            finish_reason=finished.finish_reason,
            prompt_tokens=finished.prompt_tokens,
            completion_tokens=finished.completion_tokens,
            time_to_first_token_ms=((first or ended) - started) * 1000,
            total_ms=(ended - started) * 1000,
            queue_wait_ms=waited * 1000,
            model=self.engine.info.model,
        )


def _ranged(
    name: str, value: float | None, default: float, low: float, high: float, *, low_open: bool
) -> float:
    if value is None:
        return default
    too_low = value <= low if low_open else value < low
    if math.isnan(value) or too_low or value > high:
        bound = f"above {low:g}" if low_open else f"from {low:g}"
        raise InvalidArgument(f"sampling.{name} is {value:g}; use a value {bound} to {high:g}")
    return value

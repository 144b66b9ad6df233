"""Creates the configured engine in an async context manager that always closes it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.core import ReasonerCore
from memex.reasoner.engine import Engine

# Generations at once when MEMEX_REASONER_MAX_ACTIVE is 0. llama.cpp: one context on half the
# cores, the rest left to the other services; on 2 cores a second context gave 0.91x to 1.26x one
# stream's throughput in aggregate (idle vs busy machine) while halving each stream's speed, so
# more is a deployment choice. A remote server batches many; the stub costs nothing.
DEFAULT_ACTIVE = {"llama_cpp": 1, "openai": 16, "stub": 64}


def max_active(settings: ReasonerSettings) -> int:
    """The configured number of concurrent generations, or the engine's default."""
    return settings.max_active or DEFAULT_ACTIVE[settings.engine]


@contextlib.asynccontextmanager
async def open_engine(settings: ReasonerSettings) -> AsyncIterator[Engine]:
    """The engine MEMEX_REASONER_ENGINE names; loading happens off the event loop."""
    if settings.engine == "llama_cpp":
        from memex.reasoner.llama_engine import LlamaCppEngine

        llama = await asyncio.to_thread(
            LlamaCppEngine,
            settings.gguf_path,
            contexts=max_active(settings),
            context_length=settings.context_length,
            n_threads=settings.n_threads,
            n_batch=settings.n_batch,
            n_gpu_layers=settings.n_gpu_layers,
            flash_attn=settings.flash_attn,
            model_name=settings.reported_model,
            prompt_cache_bytes=settings.prompt_cache_bytes,
            speculative=settings.speculative,
            draft_tokens=settings.speculative_draft_tokens,
        )
        try:
            yield llama
        finally:
            await asyncio.to_thread(llama.close)
    elif settings.engine == "openai":
        from memex.reasoner.openai_engine import OpenAICompatibleEngine

        remote = OpenAICompatibleEngine(
            base_url=settings.openai_base_url,
            model=settings.openai_model,
            api_key=settings.openai_api_key,
            local=settings.openai_local,
            context_length=settings.context_length,
            structured_output=settings.openai_structured_output,
            timeout_seconds=settings.openai_timeout_seconds,
            connect_timeout_seconds=settings.openai_connect_timeout_seconds,
            retries=settings.openai_retries,
            model_name=settings.model_name,
        )
        try:
            await remote.check()
            yield remote
        finally:
            await remote.aclose()
    else:
        from memex.reasoner.stub_engine import StubEngine, load_script

        script = load_script(settings.stub_script) if settings.stub_script else None
        yield StubEngine(
            script=script,
            delay_ms=settings.stub_delay_ms,
            context_length=settings.context_length,
            model_name=settings.model_name,
        )


@contextlib.asynccontextmanager
async def open_core(settings: ReasonerSettings) -> AsyncIterator[ReasonerCore]:
    """The loaded engine behind the scheduler; closes the engine on exit."""
    async with open_engine(settings) as engine:
        yield ReasonerCore(settings, engine, max_active(settings))

"""llama.cpp in process (llama-cpp-python), the default engine on a machine without a GPU.

Each active generation owns one llama.cpp context (``Llama`` object; the weights are mmapped, so
the contexts share them in the page cache) and runs in a worker thread, where llama.cpp releases
the GIL while it computes. Tokens travel back to the event loop one by one. The thread checks its
stop flag between decode steps, prompt evaluation included, so a cancelled generation stops
within one step and its context goes back to the pool.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import dataclasses
import json
import logging
import os
import queue
import random
import threading
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp.llama_grammar import LlamaGrammar

from memex.reasoner.engine import (
    ChatMessage,
    Delta,
    EngineInfo,
    Event,
    Finished,
    FinishReason,
    GenerationRequest,
)
from memex.reasoner.errors import ModelNotPrepared, PromptTooLong
from memex.reasoner.llama_model import (
    PREFILL_SAMPLE_TOKENS,
    _chat_formatter,
    _eval_prompt,
    _grammar_for,
    _prefill_rate,
)
from memex.reasoner.metrics import PREFILL_TOKENS, PROMPT_CACHE_HITS, PROMPT_CACHE_TOKENS
from memex.reasoner.prompt_cache import PrefixStates, restore_sequence, save_sequence
from memex.reasoner.speculative import DraftingLlama, SpeculativeMode, draft_model
from memex.reasoner.text import StopMatcher

log = logging.getLogger(__name__)

ENGINE_NAME = "llama.cpp"

Emit = Callable[[Event | BaseException], None]


def default_threads(contexts: int) -> int:
    """CPU threads per context, shared among the contexts: half the cores of a machine with 4 or
    more (llama.cpp's own default, as hyper-threads do not help), every core of a smaller one.
    On 2 idle vCPUs, 2 threads prefilled 1.7 times faster than 1 (Qwen2.5-Coder-1.5B: 51 against
    30 tokens/s), and prefill is most of an answer's time. But threads spin-wait on each other:
    while another busy process shares those 2 cores, 2 threads decoded 7 times slower than 1, so
    set ``MEMEX_REASONER_N_THREADS=1`` on a machine that is busy with other work."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    return max(1, (cores if cores < 4 else cores // 2) // contexts)


class LlamaCppEngine:
    """Streams chat completions from a GGUF model with a pool of llama.cpp contexts."""

    def __init__(
        self,
        model_path: Path,
        *,
        contexts: int = 1,
        context_length: int = 4096,
        n_threads: int = 0,
        n_batch: int = 256,
        n_gpu_layers: int = 0,
        flash_attn: bool = False,
        model_name: str = "",
        prompt_cache_bytes: int = 0,
        speculative: SpeculativeMode = "none",
        draft_tokens: int = 2,
    ) -> None:
        """Loads the model (blocking: call it from a worker thread). ``speculative`` drafts
        ``draft_tokens`` at a time (``memex.reasoner.speculative``)."""
        if not model_path.is_file():
            raise ModelNotPrepared(str(model_path))
        threads = n_threads or default_threads(contexts)
        # Without a draft model, llama-cpp-python's own Llama, as before speculation existed.
        llama = llama_cpp.Llama if speculative == "none" else DraftingLlama
        self._llamas = [
            llama(
                model_path=str(model_path),
                n_ctx=context_length,
                n_batch=n_batch,
                n_ubatch=n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                n_gpu_layers=n_gpu_layers,
                flash_attn=flash_attn,
                draft_model=draft_model(speculative, draft_tokens),
                verbose=False,
            )
            for _ in range(contexts)
        ]
        self._pool: queue.SimpleQueue[llama_cpp.Llama] = queue.SimpleQueue()
        for llm in self._llamas:
            self._pool.put(llm)
        self._executor = ThreadPoolExecutor(max_workers=contexts, thread_name_prefix="llama")
        self._n_batch = n_batch
        first = self._llamas[0]
        self._formatter = _chat_formatter(first)
        self._prefix_formatter = _chat_formatter(first, add_generation_prompt=False)
        name = model_name or model_path.name
        self.info = EngineInfo(
            engine=ENGINE_NAME,
            model=name,
            context_length=first.n_ctx(),
            local=True,
            aliases=(name, model_path.name, model_path.stem),
            prefill_tokens_per_second=_prefill_rate(first, n_batch),
        )
        self.prompt_cache = PrefixStates(prompt_cache_bytes)
        # Per context: the last prompt's length and where its last evaluated batch began.
        self._last_batch: dict[int, tuple[int, int]] = {}
        self.prompt_cache_hits = 0
        """Prompts whose prefix was restored from the prompt cache."""
        self.prompt_cache_tokens = 0
        """Prompt tokens restored from the prompt cache rather than evaluated."""
        self.prefilled_tokens = 0
        """Prompt tokens evaluated (neither in the KV cache already nor restored)."""
        self._counters = threading.Lock()
        self._hits = PROMPT_CACHE_HITS.labels(ENGINE_NAME, name)
        self._reused = PROMPT_CACHE_TOKENS.labels(ENGINE_NAME, name)
        self._prefilled = PREFILL_TOKENS.labels(ENGINE_NAME, name)
        log.info(
            "loaded %s: %d context(s) of %d tokens, %d thread(s) each, prefill %.0f tokens/s, "
            "speculative decoding: %s",
            model_path,
            contexts,
            self.info.context_length,
            threads,
            self.info.prefill_tokens_per_second,
            speculative if speculative == "none" else f"{speculative}, {draft_tokens} tokens",
        )

    def close(self) -> None:
        """Waits for running generations to stop, then frees the contexts."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        for llm in self._llamas:
            llm.close()

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Prompt tokens the chat template makes of ``messages`` (for tests and benchmarks)."""
        return len(self._prompt_tokens(self._llamas[0], messages)[0])

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[Event, None]:
        """Streams the reply; closing the stream stops the worker before it returns."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event | BaseException] = asyncio.Queue()
        stop = threading.Event()

        def emit(item: Event | BaseException) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed under us: nobody listens
                loop.call_soon_threadsafe(events.put_nowait, item)

        work = loop.run_in_executor(self._executor, self._run, request, stop, emit)
        try:
            while True:
                item = await events.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, Finished):
                    return
        finally:
            stop.set()
            # Wait for the worker even through repeated cancellation: the slot must not be
            # reused while this context still computes. It stops within one decode step.
            interrupted = False
            while not work.done():
                try:
                    await asyncio.shield(work)
                except asyncio.CancelledError:
                    interrupted = True
                except Exception:
                    break  # its error was delivered as an event, or nobody is listening
            if interrupted:
                raise asyncio.CancelledError

    # --- in the worker thread ---

    def _run(self, request: GenerationRequest, stop: threading.Event, emit: Emit) -> None:
        llm = self._pool.get()
        try:
            emit(self._generate(llm, request, stop, emit))
        except BaseException as exc:
            emit(exc)
        finally:
            self._pool.put(llm)

    def _generate(
        self, llm: llama_cpp.Llama, request: GenerationRequest, stop: threading.Event, emit: Emit
    ) -> Finished:
        sampling = request.sampling
        tokens, system_end = self._prompt_tokens(llm, request.messages)
        n_ctx = llm.n_ctx()
        room = n_ctx - len(tokens)
        if room <= 0 or (sampling.max_tokens_requested and sampling.max_tokens > room):
            raise PromptTooLong(len(tokens), sampling.max_tokens, n_ctx)
        max_tokens = min(sampling.max_tokens, room)
        grammar = self._grammar(llm, request.json_schema)
        if not self._prefill(llm, tokens, system_end, stop):
            return Finished("cancelled", len(tokens), 0)

        seed = sampling.seed if sampling.seed is not None else random.getrandbits(31)
        llm.set_seed(seed & 0x7FFFFFFF)  # llama.cpp seeds are 32-bit; all ones means "random"
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        matcher = StopMatcher(sampling.stop)
        finish: FinishReason = "length"
        produced = 0
        steps = llm.generate(
            tokens,
            temp=sampling.temperature,
            top_p=sampling.top_p,
            repeat_penalty=1.0,
            grammar=grammar,
        )
        try:
            for token in steps:
                if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                    finish = "stop"
                    break
                produced += 1
                text, stopped = matcher.feed(decoder.decode(llm.detokenize([token])))
                if text:
                    emit(Delta(text))
                if stopped:
                    finish = "stop"
                    break
                if produced >= max_tokens:
                    break
                if stop.is_set():  # checked before the next decode step starts
                    finish = "cancelled"
                    break
        finally:
            steps.close()
        # Text held back as a possible stop string, or an unfinished UTF-8 sequence.
        tail = matcher.flush() + decoder.decode(b"", final=True)
        if tail and finish != "cancelled":
            emit(Delta(tail))
        return Finished(finish, len(tokens), produced)

    def _prompt_tokens(
        self, llm: llama_cpp.Llama, messages: Sequence[ChatMessage]
    ) -> tuple[list[int], int]:
        """The prompt's tokens, and how many of them make its leading system message (0 if it
        has none, or when the template does not render it as a prefix of the whole)."""
        chat = [{"role": m.role, "content": m.content} for m in messages]
        formatted = self._formatter(messages=chat)  # type: ignore[arg-type]
        add_bos = not formatted.added_special
        tokens = list(llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=add_bos, special=True))
        if not self.prompt_cache.capacity or not messages or messages[0].role != "system":
            return tokens, 0
        system = self._prefix_formatter(messages=chat[:1]).prompt  # type: ignore[arg-type]
        if not formatted.prompt.startswith(system):
            return tokens, 0
        prefix = llm.tokenize(system.encode("utf-8"), add_bos=add_bos, special=True)
        return tokens, (len(prefix) if tokens[: len(prefix)] == list(prefix) else 0)

    def _prefill(
        self, llm: llama_cpp.Llama, tokens: list[int], system_end: int, stop: threading.Event
    ) -> bool:
        """Evaluates the prompt one batch at a time, keeping what the KV cache already holds or,
        when longer, restoring a saved state of the prompt's start; saves the state after the
        system message (``system_end`` tokens) when it is evaluated and not saved yet.

        Returns False when stopped first. Afterwards ``generate`` finds the prompt cached and
        samples straight away.
        """
        cached = llm.input_ids[: llm.n_tokens]
        prefix = 0
        for a, b in zip(cached, tokens, strict=False):
            if a != b:
                break
            prefix += 1
        # Always evaluate the last prompt token, so the logits are this prompt's. When the whole
        # prompt was this context's last one, evaluate its last batch again as it was: a token
        # evaluated alone rounds differently from the same token at the end of a batch, and a
        # greedy reply to the same prompt changed at a near tie (seen with an AVX-512 build).
        llm.n_tokens = min(prefix, len(tokens) - 1)
        length, batch_start = self._last_batch.get(id(llm), (0, 0))
        if prefix >= len(tokens) == length:
            llm.n_tokens = min(llm.n_tokens, batch_start)
        saved = self.prompt_cache.longest(tokens, shorter_than=len(tokens))
        restored = 0
        if saved is not None and len(saved[0]) > llm.n_tokens:
            if restore_sequence(llm, *saved):
                restored = llm.n_tokens
            else:  # not expected; the prompt is then evaluated from the start
                log.warning("llama.cpp refused a saved prompt state; evaluating in full")
        start = llm.n_tokens
        save_at = system_end if start < system_end < len(tokens) else 0
        if save_at and (tuple(tokens[:save_at]) in self.prompt_cache):
            save_at = 0
        evaluating = 0.0
        while llm.n_tokens < len(tokens):
            if stop.is_set():
                return False
            end = min(llm.n_tokens + self._n_batch, len(tokens))
            if llm.n_tokens < save_at < end:
                end = save_at
            started = time.perf_counter()
            self._last_batch[id(llm)] = (len(tokens), llm.n_tokens)
            _eval_prompt(llm, tokens[llm.n_tokens : end])
            evaluating += time.perf_counter() - started
            if llm.n_tokens == save_at:
                self.prompt_cache.put(tuple(tokens[:save_at]), save_sequence(llm))
        self._count(restored, len(tokens) - start)
        self._observe_prefill(len(tokens) - start, evaluating)
        return True

    def _observe_prefill(self, tokens: int, seconds: float) -> None:
        """Raises the reported prefill speed to what a real prompt of ``PREFILL_SAMPLE_TOKENS`` or
        more reached, if faster: what the machine does, once the stack's other services stopped
        competing for it as they started (a busy moment only ever slows prefill down)."""
        if tokens < PREFILL_SAMPLE_TOKENS or seconds <= 0:
            return
        rate = round(tokens / seconds, 1)
        if rate > self.info.prefill_tokens_per_second:
            log.info("prefill speed now %.0f tokens/s (a %d-token prompt)", rate, tokens)
            self.info = dataclasses.replace(self.info, prefill_tokens_per_second=rate)

    def _count(self, restored: int, prefilled: int) -> None:
        with self._counters:
            if restored:
                self.prompt_cache_hits += 1
                self.prompt_cache_tokens += restored
            self.prefilled_tokens += prefilled
        if restored:
            self._hits.inc()
            self._reused.inc(restored)
        self._prefilled.inc(prefilled)

    def _grammar(
        self, llm: llama_cpp.Llama, schema: Mapping[str, Any] | None
    ) -> LlamaGrammar | None:
        if schema is None:
            return None
        return _grammar_for(json.dumps(schema, sort_keys=True), llm._model.vocab)

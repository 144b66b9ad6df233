"""Dynamic batching: concurrent Embed calls are merged into shared model batches.

One loop takes the oldest request, then every request already waiting, then waits up to
``max_wait`` for more while the batch is short. The model runs in one worker thread (ONNX Runtime
uses its own intra-op threads), so while a batch computes, the next one gathers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from prometheus_client import Counter, Gauge, Histogram

from memex.embedding.engine import EmbedResult
from memex.shared.errors import ResourceExhausted, Unavailable

log = logging.getLogger(__name__)

BATCH_TEXTS = Histogram(
    "memex_embedding_batch_texts",
    "Texts per model batch.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
REQUEST_TEXTS = Histogram(
    "memex_embedding_request_texts",
    "Texts per Embed request.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
BATCH_SECONDS = Histogram(
    "memex_embedding_batch_seconds",
    "Model time per batch.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
QUEUE_TEXTS = Gauge("memex_embedding_queue_texts", "Texts waiting for a batch.")
TOKENS = Counter("memex_embedding_tokens_total", "Tokens embedded, special tokens included.")


@dataclass
class _Pending:
    texts: Sequence[str]
    future: asyncio.Future[EmbedResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class DynamicBatcher:
    """Merges concurrent requests into batches of at most ``max_batch_texts`` texts."""

    def __init__(
        self,
        embed: Callable[[Sequence[str]], EmbedResult],
        *,
        max_batch_texts: int,
        max_wait_s: float,
        max_queue_texts: int,
    ) -> None:
        self._embed = embed
        self._max_batch = max_batch_texts
        self._max_wait = max_wait_s
        self._max_queue = max_queue_texts
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._queued_texts = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> DynamicBatcher:
        self._task = asyncio.create_task(self._loop(), name="embedding-batcher")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        while not self._queue.empty():
            pending = self._queue.get_nowait()
            if not pending.future.done():
                pending.future.set_exception(Unavailable("embedding service is shutting down"))
        self._executor.shutdown(wait=True)

    @property
    def queued_texts(self) -> int:
        """Texts waiting for a batch."""
        return self._queued_texts

    async def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Embeds ``texts`` in whatever batch comes next; RESOURCE_EXHAUSTED when full."""
        if self._queued_texts + len(texts) > self._max_queue:
            raise ResourceExhausted(
                f"embedding queue is full ({self._queued_texts} texts waiting, limit "
                f"{self._max_queue}); retry with backoff"
            )
        REQUEST_TEXTS.observe(len(texts))
        pending = _Pending(texts)
        self._queued_texts += len(texts)
        QUEUE_TEXTS.set(self._queued_texts)
        self._queue.put_nowait(pending)
        return await pending.future

    async def _take(self) -> list[_Pending]:
        batch = [await self._queue.get()]
        size = len(batch[0].texts)
        deadline = time.monotonic() + self._max_wait
        while size < self._max_batch:
            if self._queue.empty():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    nxt = await asyncio.wait_for(self._queue.get(), remaining)
                except TimeoutError:
                    break
            else:
                nxt = self._queue.get_nowait()
            batch.append(nxt)
            size += len(nxt.texts)
        return batch

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._take()
            self._queued_texts -= sum(len(p.texts) for p in batch)
            QUEUE_TEXTS.set(self._queued_texts)
            live = [p for p in batch if not p.future.done()]  # callers may have gone away
            if not live:
                continue
            texts = [t for p in live for t in p.texts]
            started = time.perf_counter()
            try:
                result = await loop.run_in_executor(self._executor, self._embed, texts)
            except Exception as exc:
                log.exception("embedding batch of %d texts failed", len(texts))
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            BATCH_SECONDS.observe(time.perf_counter() - started)
            BATCH_TEXTS.observe(len(texts))
            TOKENS.inc(int(np.sum(result.token_counts)))
            offset = 0
            for p in live:
                n = len(p.texts)
                if not p.future.done():
                    p.future.set_result(
                        EmbedResult(
                            vectors=result.vectors[offset : offset + n],
                            truncated=result.truncated[offset : offset + n],
                            token_counts=result.token_counts[offset : offset + n],
                        )
                    )
                offset += n

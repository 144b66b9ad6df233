"""Dynamic batching, with a recording embed function standing in for the model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from memex.embedding.batcher import DynamicBatcher
from memex.embedding.engine import EmbedResult
from memex.shared.errors import ResourceExhausted


class Recorder:
    """Embeds each text as [len(text)], and records the batches it was given."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.gate = gate
        self.fail = fail

    def __call__(self, texts: Sequence[str]) -> EmbedResult:
        if self.gate is not None:
            self.gate.wait(5)
        self.batches.append(list(texts))
        if self.fail:
            raise RuntimeError("model crashed")
        vectors = np.array([[len(t)] for t in texts], dtype=np.float32)
        return EmbedResult(vectors, [False] * len(texts), [len(t) for t in texts])


async def test_concurrent_requests_share_batches_and_get_their_own_results() -> None:
    recorder = Recorder()
    async with DynamicBatcher(
        recorder, max_batch_texts=64, max_wait_s=0.05, max_queue_texts=1000
    ) as b:
        results = await asyncio.gather(*(b.embed(["x" * i]) for i in range(1, 33)))
    assert [int(r.vectors[0, 0]) for r in results] == list(range(1, 33))
    assert len(recorder.batches) < 32
    assert max(len(batch) for batch in recorder.batches) > 1


async def test_batches_never_exceed_the_maximum_unless_one_request_does() -> None:
    recorder = Recorder()
    async with DynamicBatcher(
        recorder, max_batch_texts=4, max_wait_s=0.02, max_queue_texts=1000
    ) as b:
        await asyncio.gather(*(b.embed(["a", "b"]) for _ in range(10)), b.embed(["c"] * 9))
    sizes = [len(batch) for batch in recorder.batches]
    assert all(size <= 4 or size == 9 for size in sizes)
    assert sum(sizes) == 29


async def test_a_full_queue_answers_resource_exhausted() -> None:
    gate = threading.Event()
    recorder = Recorder(gate)
    async with DynamicBatcher(recorder, max_batch_texts=2, max_wait_s=0, max_queue_texts=4) as b:
        first = asyncio.ensure_future(
            b.embed(["a", "b"])
        )  # taken by the model, blocked on the gate
        await asyncio.sleep(0.1)
        waiting = asyncio.ensure_future(b.embed(["c", "d", "e", "f"]))
        await asyncio.sleep(0)
        with pytest.raises(ResourceExhausted, match="queue is full"):
            await b.embed(["g"])
        gate.set()
        await asyncio.gather(first, waiting)


async def test_a_failed_batch_fails_each_of_its_requests_and_the_loop_goes_on() -> None:
    recorder = Recorder(fail=True)
    async with DynamicBatcher(
        recorder, max_batch_texts=8, max_wait_s=0.01, max_queue_texts=100
    ) as b:
        outcomes = await asyncio.gather(b.embed(["a"]), b.embed(["b"]), return_exceptions=True)
        assert all(isinstance(o, RuntimeError) for o in outcomes)
        recorder.fail = False
        assert (await b.embed(["abc"])).token_counts == [3]


async def test_a_caller_that_went_away_is_skipped() -> None:
    gate = threading.Event()
    recorder = Recorder(gate)
    async with DynamicBatcher(recorder, max_batch_texts=1, max_wait_s=0, max_queue_texts=100) as b:
        first = asyncio.ensure_future(b.embed(["first"]))
        await asyncio.sleep(0.05)
        gone = asyncio.ensure_future(b.embed(["gone"]))
        await asyncio.sleep(0.05)
        gone.cancel()
        gate.set()
        await first
        await b.embed(["after"])
    assert ["gone"] not in recorder.batches

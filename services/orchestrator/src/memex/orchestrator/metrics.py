"""The orchestrator's Prometheus metrics: latency per stage and what each request came to.

Labels are small closed sets (stage names, outcomes), never queries, tenants or ids. The service
and the chat worker each serve these on their own metrics port.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memex.orchestrator.queue.turns import PendingTurns
from memex.shared.errors import MemexError
from memex.shared.metrics import LATENCY_BUCKETS

log = logging.getLogger(__name__)

STAGES = (
    "reframe",
    "plan",
    "retrieve",
    "counter_evidence",
    "synthesize",
    "ground_check",
    "revise",
    "chat_retrieve",
    "chat_first_token",
    "chat_stream",
    "search",
)

STAGE_SECONDS = Histogram(
    "memex_orchestrator_stage_seconds",
    "Time spent in one stage of an ask, chat or search (model calls included where the stage "
    "makes one; chat_first_token is from the request to the first visible text).",
    ["stage"],
    buckets=LATENCY_BUCKETS,
)
ASKS = Counter(
    "memex_orchestrator_asks_total",
    "Asks by outcome: answered (grounded citations), abstained, or error.",
    ["outcome"],
)
CHATS = Counter(
    "memex_orchestrator_chats_total",
    "Chat replies by outcome: done, error (an error event ended the stream), or cancelled "
    "(the client went away mid-reply).",
    ["outcome"],
)
ABSTENTIONS = Counter(
    "memex_orchestrator_abstentions_total",
    "Asks that abstained, by reason: empty (nothing retrieved) or ungrounded.",
    ["reason"],
)
DROPPED_STEPS = Counter(
    "memex_orchestrator_dropped_plan_steps_total", "Plan steps dropped as invalid."
)
DROPPED_CITATIONS = Counter(
    "memex_orchestrator_dropped_citations_total",
    "Citations dropped because they named nothing the model was shown, by request kind.",
    ["kind"],
)
WITHHELD = Counter(
    "memex_orchestrator_withheld_sensitive_total",
    "Sensitive items withheld from the model, by request kind.",
    ["kind"],
)
WORKER_TURNS = Counter(
    "memex_orchestrator_worker_turns_total",
    "Queued turns the chat worker finished, by outcome: answered, error, lost (the claim was "
    "taken back before the answer was written) or requeued (stopped mid-answer).",
    ["outcome"],
)

for _stage in STAGES:  # every stage appears at zero before its first observation
    STAGE_SECONDS.labels(_stage)


@contextlib.contextmanager
def timed(stage: str) -> Iterator[None]:
    """Observes the block's duration under ``stage`` (also when it raises)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STAGE_SECONDS.labels(stage).observe(time.perf_counter() - started)


class TurnQueueCollector(Collector):
    """The queued-turn backlog, read from the queue's database at each scrape (so it is right
    whichever process wrote last: the service queues turns, the workers take them)."""

    def __init__(self, pending: Callable[[], PendingTurns]) -> None:
        self._pending = pending

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "memex_orchestrator_pending_turns", "Queued chat turns waiting for a worker."
            ),
            GaugeMetricFamily(
                "memex_orchestrator_oldest_pending_turn_age_seconds",
                "How long the oldest waiting turn has waited (0 when none waits).",
            ),
        )

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The two gauges, without reading the database."""
        yield from self._families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The backlog now; nothing when the database cannot be read (the scrape still works,
        and the gap shows on a dashboard)."""
        try:
            pending = self._pending()
        except (sqlite3.Error, MemexError) as exc:  # MemexError: PostgreSQL unreachable
            log.warning("cannot read the turn queue for metrics: %s", exc)
            return
        count, age = self._families()
        count.add_metric([], pending.count)
        age.add_metric([], pending.oldest_age_seconds)
        yield count
        yield age


@contextlib.contextmanager
def queue_metrics(
    pending: Callable[[], PendingTurns], registry: CollectorRegistry = REGISTRY
) -> Iterator[None]:
    """Exports the turn queue's backlog from ``registry`` until the block ends."""
    collector = TurnQueueCollector(pending)
    registry.register(collector)
    try:
        yield
    finally:
        registry.unregister(collector)

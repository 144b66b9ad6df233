"""The queued-turn backlog as Prometheus gauges, read from the queue's database at each scrape."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry

from memex.orchestrator.metrics import queue_metrics
from memex.orchestrator.state.store import OrchestratorStore, PendingTurns

COUNT = "memex_orchestrator_pending_turns"
AGE = "memex_orchestrator_oldest_pending_turn_age_seconds"


def test_pending_turns_counts_unclaimed_user_turns(state: Path | str) -> None:
    store = OrchestratorStore(state)
    assert store.pending_turns() == PendingTurns(0, 0.0)
    first = store.create_turn("me", "", "first question", "t")
    store.create_turn("me", first.thread_id, "second question", "t")
    # The first turn was asked a minute ago: the oldest waiting decides the age.
    asked = (datetime.now(UTC) - timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    store.query("UPDATE turns SET created_at = ? WHERE id = ?", asked, first.id)
    pending = store.pending_turns()
    assert pending.count == 2
    assert 59 < pending.oldest_age_seconds < 120
    claimed = store.claim_next("worker-1", lease_seconds=60)
    assert claimed is not None and claimed.id == first.id
    pending = store.pending_turns()
    assert pending.count == 1 and pending.oldest_age_seconds < 30
    store.close()


def test_the_gauges_follow_the_queue_at_each_scrape(state: Path | str) -> None:
    store = OrchestratorStore(state)
    registry = CollectorRegistry()
    with queue_metrics(store.pending_turns, registry):
        assert registry.get_sample_value(COUNT) == 0
        assert registry.get_sample_value(AGE) == 0
        store.create_turn("me", "", "a question", "t")
        assert registry.get_sample_value(COUNT) == 1
        age = registry.get_sample_value(AGE)
        assert age is not None and age >= 0
    assert registry.get_sample_value(COUNT) is None  # unregistered when the block ends
    store.close()


def test_an_unreadable_queue_leaves_the_gauges_out_rather_than_failing_the_scrape() -> None:
    def broken() -> PendingTurns:
        raise sqlite3.OperationalError("database is locked")

    registry = CollectorRegistry()
    with queue_metrics(broken, registry):
        assert registry.get_sample_value(COUNT) is None

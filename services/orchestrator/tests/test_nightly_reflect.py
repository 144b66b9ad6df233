"""The worker's nightly learning loop (issue 37, docs/reflect.md): when the next run is, that it
reflects on the default tenant with what a local reasoner may see, that it is off when the
settings say so or the reasoner is remote, and that a failed night does not stop the next."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.queue import worker
from memex.orchestrator.queue.worker import nightly_reflect, seconds_until
from memex.orchestrator.state.store import OrchestratorStore


def test_the_next_run_is_the_next_time_the_clock_shows_reflect_at() -> None:
    now = dt.datetime(2026, 5, 1, 2, 0, tzinfo=dt.UTC)
    assert seconds_until("03:30", now) == 90 * 60
    assert seconds_until("01:00", now) == 23 * 3600  # passed today: tomorrow
    assert seconds_until("02:00", now) == 24 * 3600  # the run that just ended does not repeat


@dataclass
class Reflector:
    """Records each run; the first ``failures`` runs raise."""

    failures: int = 0
    runs: list[tuple[str, bool]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def reflect(self, tenant: str, *, include_sensitive: bool) -> Any:
        self.runs.append((tenant, include_sensitive))
        if len(self.runs) >= 2:
            self.done.set()
        if len(self.runs) <= self.failures:
            raise RuntimeError("the model went away")
        return SimpleNamespace(beliefs=[])


def _orchestrator(reflector: Reflector, local: bool, claims: bool = True) -> Any:
    sensitivity = SimpleNamespace(local=local)
    store = SimpleNamespace(claim_nightly=lambda job, tenant, day, worker_id: claims)
    return SimpleNamespace(
        reflector=reflector, pipeline=SimpleNamespace(sensitivity=sensitivity), store=store
    )


async def _run(
    reflector: Reflector, local: bool = True, claims: bool = True, **settings: Any
) -> None:
    """Runs the loop until two nights have passed, or it returned on its own (off)."""
    stopping = asyncio.Event()
    orchestrator = _orchestrator(reflector, local, claims)
    loop = asyncio.create_task(
        nightly_reflect(orchestrator, OrchestratorSettings(**settings), stopping)
    )
    nights = asyncio.create_task(reflector.done.wait())
    await asyncio.wait({loop, nights}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    stopping.set()
    nights.cancel()
    await asyncio.wait_for(loop, 5)


async def test_each_night_reflects_the_default_tenant_and_a_failure_waits_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "seconds_until", lambda at, now: 0.01)  # night falls at once
    reflector = Reflector(failures=1)
    await _run(reflector, default_tenant="me")
    assert reflector.runs[:2] == [("me", True), ("me", True)]  # the failed night, then the next


@pytest.mark.parametrize(
    ("local", "settings"),
    [(True, {"reflect_nightly": False}), (False, {}), (False, {"reflect_nightly": False})],
)
async def test_it_is_off_when_the_settings_say_so_or_the_reasoner_is_remote(
    monkeypatch: pytest.MonkeyPatch, local: bool, settings: dict[str, Any]
) -> None:
    monkeypatch.setattr(worker, "seconds_until", lambda at, now: 0.01)
    reflector = Reflector()
    await _run(reflector, local, **settings)
    assert reflector.runs == []


async def test_a_remote_reasoner_reflects_when_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "seconds_until", lambda at, now: 0.01)
    reflector = Reflector()
    await _run(reflector, local=False, reflect_remote=True)
    assert reflector.runs[:2] == [("default", True), ("default", True)]


async def test_a_night_another_worker_claimed_is_not_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "seconds_until", lambda at, now: 0.01)
    reflector = Reflector()
    await _run(reflector, claims=False)
    assert reflector.runs == []


def test_of_two_workers_on_one_database_the_first_claims_the_night(state: Path | str) -> None:
    stores = [OrchestratorStore(state) for _ in range(2)]
    try:
        first, second = stores
        assert first.claim_nightly("reflect", "me", "2026-05-01", "w1")
        assert not second.claim_nightly("reflect", "me", "2026-05-01", "w2")
        assert second.claim_nightly("reflect", "me", "2026-05-02", "w2")  # the next night
        assert second.claim_nightly("reflect", "you", "2026-05-01", "w2")  # another tenant
    finally:
        for store in stores:
            store.close()

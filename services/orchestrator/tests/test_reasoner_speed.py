"""The orchestrator follows the reasoner's prefill speed, which sizes an ask's first pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memex.orchestrator import service
from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.ports import ReasonerInfo
from memex.orchestrator.turn.pipeline import Briefer
from memex.shared.errors import Unavailable


def info(rate: float) -> ReasonerInfo:
    return ReasonerInfo("llama.cpp", "qwen", 4096, True, rate)


class RisingSpeed:
    """A reasoner that is restarting at first, then reports the speeds its prompts reached.
    ``asked_again`` is set when asked after the last speed: by then that one was taken."""

    def __init__(self, rates: list[float]) -> None:
        self._answers: list[float | None] = [None, *rates]
        self.asked_again = asyncio.Event()

    async def info(self) -> ReasonerInfo:
        if len(self._answers) == 1:
            self.asked_again.set()
        rate = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if rate is None:
            raise Unavailable("the reasoner is restarting")
        return info(rate)


async def test_the_first_pass_grows_with_the_speed_the_reasoner_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "REASONER_SPEED_SECONDS", 0.01)
    settings = OrchestratorSettings(
        data_dir=tmp_path, personas_dir=tmp_path / "personas", ask_first_pass_seconds=8.0
    )
    briefer = Briefer(settings, info(60.0))  # measured while the stack started
    slow = briefer.first_pass_budget("What does the allotment cost?")

    reasoner = RisingSpeed([90.0, 120.0])
    following = asyncio.create_task(service._follow_reasoner_speed(reasoner.info, briefer))
    try:
        async with asyncio.timeout(5):
            await reasoner.asked_again.wait()
    finally:
        following.cancel()
    assert briefer.prefill_tokens_per_second == 120.0
    assert briefer.first_pass_budget("What does the allotment cost?") > 1.8 * slow


def test_however_slow_the_model_a_first_pass_reads_about_two_excerpts(tmp_path: Path) -> None:
    settings = OrchestratorSettings(data_dir=tmp_path, personas_dir=tmp_path / "personas")
    question = "What does the allotment cost?"
    assert Briefer(settings, info(10.0)).first_pass_budget(question) == 300
    # About what the reasoner reads in ask_first_pass_seconds (3.5 s), less the question.
    assert 300 < Briefer(settings, info(120.0)).first_pass_budget(question) < 420
    more = settings.model_copy(update={"ask_first_pass_min_tokens": 450})
    assert Briefer(more, info(10.0)).first_pass_budget(question) == 450

"""`make chaos`'s run, end to end: every fault lands on the real stack under load and every check
after it holds (benchmarks/chaos.py says what each checks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memex.embedding.config import default_model_dir
from memex.testing import require

CHAOS = Path(__file__).resolve().parents[2] / "benchmarks" / "chaos.py"


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_fault_under_load_keeps_acknowledged_writes_and_recovers(tmp_path: Path) -> None:
    require(default_model_dir() / "model.onnx", "run `make models`")
    report = tmp_path / "chaos.md"
    run = subprocess.run(
        [sys.executable, str(CHAOS), "--users", "2", "--out", str(report)],
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-6000:]
    text = report.read_text()
    for fault in ("kill -9 embedding", "kill -9 gateway", "SIGSTOP retrieval", "disk full"):
        assert fault in text, text
    assert "FAILED" not in text, text

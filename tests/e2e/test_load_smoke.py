"""`make load`'s own code, end to end: a short run on a real stack writes a report that covers
the whole mix, with nothing failing but rate limiting."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memex.embedding.config import default_model_dir
from memex.testing import require

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from load.grpc_load import ghz_binary

RUN_LOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "load" / "run_load.py"
# Every request of the locustfile's mix, as the report's endpoint table names it.
MIX = [
    "POST /v1/ask (stream)",
    "POST /v1/ask (first event)",
    "POST /v1/ask (first words)",
    "POST /v1/chat (stream)",
    "POST /v1/chat (first event)",
    "POST /v1/chat (first words)",
    "POST /v1/search",
    "POST /v1/records/query",
    "POST /v1/turns",
    "GET /v1/turns/{id}",
    "turn: queued -> answered",
]
ROW = re.compile(r"^\| `(?P<name>[^`]+)`(?: \*)? \| (?P<requests>\d+) \| (?P<failures>\d+) \|")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_short_load_run_covers_the_mix_and_every_dashboard_panel(tmp_path: Path) -> None:
    """The issue's dashboard check: the real stack under the load test, scraped by the real
    Prometheus; every Grafana panel's query must parse and return series."""
    require(default_model_dir() / "model.onnx", "run `make models`")
    require(Path(shutil.which("prometheus") or "/usr/bin/prometheus"), "run `make prometheus`")
    require(ghz_binary() or Path("ghz"), "run `make ghz`")
    report, picture = tmp_path / "load.md", tmp_path / "dashboard.png"
    command = [sys.executable, str(RUN_LOAD), "--users", "2", "--duration", "15"]
    command += ["--out", str(report), "--dashboard", str(picture), "--grpc", "3"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stdout + run.stderr
    text = report.read_text()
    rows = {m["name"]: m for m in map(ROW.match, text.splitlines()) if m}
    for name in MIX:
        assert name in rows, f"no row for {name}:\n{text}"
        assert int(rows[name]["requests"]) > 0, f"{name} made no requests:\n{text}"
    failures = re.search(r"^Failures by status: (.*)\.$", text, re.MULTILINE)
    assert failures, text
    statuses = [] if failures[1] == "none" else [f.split(":")[0] for f in failures[1].split(", ")]
    assert set(statuses) <= {"HTTP 429"}, text
    # ghz drove every stage's own port: each answered every call OK.
    for stage in ("embedding", "retrieval", "reasoner", "orchestrator"):
        row = re.search(rf"^\| {stage} \| `[^`]+` \| (\d+) \|.*\| (.*) \|$", text, re.MULTILINE)
        assert row and int(row[1]) > 0 and row[2].startswith("OK "), f"{stage}:\n{text}"
        assert "," not in row[2], f"{stage} had calls fail:\n{text}"
    dashboard = text.split("## The dashboard during this load", 1)
    assert len(dashboard) == 2, text
    assert re.search(r"\d+ queries on \d+ panels; 0 failed", dashboard[1]), dashboard[1]
    assert picture.stat().st_size > 10_000  # the panels, drawn

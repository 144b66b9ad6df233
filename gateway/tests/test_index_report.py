"""The last `memex index` run per tenant, as `memex status` shows it (cli/index_report.py)."""

from __future__ import annotations

from pathlib import Path

from memex.cli import index_report
from memex.retrieval.v1 import retrieval_pb2
from memex.shared.stack_settings import StackSettings


def summary(skips: int) -> retrieval_pb2.IndexSummary:
    return retrieval_pb2.IndexSummary(
        added=5,
        unchanged=2,
        skipped=[
            retrieval_pb2.SkippedFile(path=f"scans/{n}.pdf", reason="a PDF without text")
            for n in range(skips)
        ],
        warnings=["Lease.pdf: pages without text, not indexed (scanned?): 2"],
    )


def test_each_tenants_last_run_is_kept_and_shown_with_its_skips(tmp_path: Path) -> None:
    settings = StackSettings(data_dir=tmp_path)
    assert index_report.load(settings) == {}
    index_report.save(settings, "", tmp_path / "vault", summary(1))
    index_report.save(settings, "work", tmp_path / "work", summary(25))
    index_report.save(settings, "", tmp_path / "vault", summary(2))  # the newer run replaces
    reports = index_report.load(settings)
    assert set(reports) == {"", "work"}
    assert reports[""]["skipped"] == [
        {"path": "scans/0.pdf", "reason": "a PDF without text"},
        {"path": "scans/1.pdf", "reason": "a PDF without text"},
    ]
    assert reports[""]["warnings"] == 1
    lines = index_report.render(reports)
    assert lines[0].startswith(f"last index (default tenant): {tmp_path / 'vault'} at ")
    assert lines[0].endswith("5 added, 0 updated, 0 removed, 2 unchanged, 2 skipped")
    assert lines[1] == "  skipped scans/0.pdf: a PDF without text"
    assert lines[3].startswith("last index (tenant work): ")
    assert lines[-1] == "  … and 5 more (`memex index --json` lists them)"
    assert len(lines) == 3 + 1 + index_report.SHOWN_SKIPS + 1


def test_an_unreadable_report_reads_as_none(tmp_path: Path) -> None:
    settings = StackSettings(data_dir=tmp_path)
    settings.run_dir.mkdir(parents=True)
    (settings.run_dir / "last-index.json").write_text("{not json")
    assert index_report.load(settings) == {}

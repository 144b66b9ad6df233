"""The last `memex index` run of each tenant, kept beside the stack's state (``run/``), so that
`memex status` can say what was skipped and why: the index's own report scrolls away, a file it
could not read does not."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from memex.retrieval.v1 import retrieval_pb2
from memex.shared.stack_settings import StackSettings

SHOWN_SKIPS = 20


def _path(settings: StackSettings) -> Path:
    return settings.run_dir / "last-index.json"


def load(settings: StackSettings) -> dict[str, dict[str, Any]]:
    """``{tenant: report}`` of the last run per tenant ("" is the single-user tenant); empty
    when nothing was indexed through this data dir, or the file is unreadable."""
    try:
        reports = json.loads(_path(settings).read_text())
    except (OSError, ValueError):
        return {}
    return reports if isinstance(reports, dict) else {}


def save(
    settings: StackSettings, tenant: str, vault: Path, summary: retrieval_pb2.IndexSummary
) -> None:
    """Records a finished run of ``tenant`` (written whole, then renamed into place)."""
    reports = load(settings)
    reports[tenant] = {
        "vault": str(vault),
        "finished": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
        "added": summary.added,
        "updated": summary.updated,
        "removed": summary.removed,
        "unchanged": summary.unchanged,
        "skipped": [{"path": s.path, "reason": s.reason} for s in summary.skipped],
        "warnings": len(summary.warnings),
    }
    path = _path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(reports, indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, path)


def render(reports: dict[str, dict[str, Any]]) -> list[str]:
    """What `memex status` prints of them: one line per tenant, then its skipped files."""
    lines: list[str] = []
    for tenant, report in sorted(reports.items()):
        skipped = report.get("skipped", [])
        who = f"tenant {tenant}" if tenant else "default tenant"
        lines.append(
            f"last index ({who}): {report.get('vault')} at {report.get('finished')}: "
            f"{report.get('added', 0)} added, {report.get('updated', 0)} updated, "
            f"{report.get('removed', 0)} removed, {report.get('unchanged', 0)} unchanged, "
            f"{len(skipped)} skipped"
        )
        lines += [f"  skipped {s['path']}: {s['reason']}" for s in skipped[:SHOWN_SKIPS]]
        if len(skipped) > SHOWN_SKIPS:
            lines.append(
                f"  … and {len(skipped) - SHOWN_SKIPS} more (`memex index --json` lists them)"
            )
    return lines

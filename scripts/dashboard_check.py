"""Evaluates every panel of memex's Grafana dashboard against a real Prometheus, and draws them.

    python scripts/dashboard_check.py --prometheus http://127.0.0.1:9090 [--picture docs/x.png]

Each panel query runs over the last ``--minutes`` through Prometheus's HTTP API (Grafana's
``$__rate_interval`` becomes ``--rate``). The check fails, naming the panel, when a query does
not parse or returns no series: a renamed metric or label shows up here, not on an operator's
empty panel. With ``--picture`` it draws each panel's series with matplotlib, as Grafana would.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "memex.json"


@dataclass(frozen=True)
class PanelQuery:
    """One query of one panel."""

    panel: str
    unit: str
    expr: str
    legend: str


@dataclass
class Result:
    """A query's series (label sets and their points) or the error Prometheus gave."""

    query: PanelQuery
    series: list[tuple[dict[str, str], list[tuple[float, float]]]]
    error: str = ""


def panel_queries(dashboard: Path = DASHBOARD) -> list[PanelQuery]:
    """Every query of every panel (rows skipped), in dashboard order."""
    model = json.loads(dashboard.read_text())
    queries = []
    for panel in model["panels"]:
        if panel.get("type") == "row":
            continue
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        for target in panel.get("targets", []):
            queries.append(
                PanelQuery(panel["title"], unit, target["expr"], target.get("legendFormat", ""))
            )
    return queries


def evaluate(
    client: httpx.Client, query: PanelQuery, rate: str, start: float, end: float
) -> Result:
    """Runs one panel query as a range query (Grafana's variables filled in)."""
    expr = query.expr.replace("$__rate_interval", rate)
    step = max(5.0, (end - start) / 120)
    response = client.get(
        "/api/v1/query_range", params={"query": expr, "start": start, "end": end, "step": step}
    )
    body: dict[str, Any] = response.json()
    if body.get("status") != "success":
        return Result(query, [], f"{body.get('errorType')}: {body.get('error')}")
    series = [
        (item["metric"], [(float(t), float(v)) for t, v in item["values"]])
        for item in body["data"]["result"]
    ]
    return Result(query, series)


def legend(template: str, labels: dict[str, str]) -> str:
    """Grafana's ``{{label}}`` legend, filled in."""
    text = template
    for name, value in labels.items():
        text = text.replace("{{" + name + "}}", value)
    return text or json.dumps(labels)


def draw(results: list[Result], picture: Path) -> None:
    """One small chart per panel, each query's series as lines (NaN points left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[str, list[Result]] = {}
    for result in results:
        panels.setdefault(result.query.panel, []).append(result)
    columns = 4
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(columns * 4.2, rows * 2.8), squeeze=False)
    start = min(
        (t for r in results for _, points in r.series for t, _ in points), default=time.time()
    )
    for ax, (title, panel_results) in zip(axes.flat, panels.items(), strict=False):
        for result in panel_results:
            for labels, points in result.series[:8]:
                kept = [(t - start, v) for t, v in points if math.isfinite(v)]
                if kept:
                    xs, ys = zip(*kept, strict=True)
                    ax.plot(xs, ys, linewidth=1.2, label=legend(result.query.legend, labels))
        ax.set_title(f"{title} ({panel_results[0].query.unit})", fontsize=9)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, loc="upper left")
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    figure.supxlabel("seconds", fontsize=8)
    figure.tight_layout()
    picture.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(picture, dpi=90)


def main() -> int:
    """Checks every panel; exits 1 naming the panels that do not parse or have no series."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", required=True, help="Prometheus base URL")
    parser.add_argument("--minutes", type=float, default=10, help="how far back to look")
    parser.add_argument("--rate", default="1m", help="what $__rate_interval becomes")
    parser.add_argument("--dashboard", type=Path, default=DASHBOARD)
    parser.add_argument("--picture", type=Path, help="draw the panels' series into this PNG")
    args = parser.parse_args()
    end = time.time()
    start = end - args.minutes * 60
    try:
        with httpx.Client(base_url=args.prometheus, timeout=30) as client:
            results = [
                evaluate(client, query, args.rate, start, end)
                for query in panel_queries(args.dashboard)
            ]
    except httpx.HTTPError as exc:
        print(f"cannot query Prometheus at {args.prometheus}: {exc}", file=sys.stderr)
        return 2
    failures = [
        f"{r.query.panel}: {r.error or 'no series'}\n    {r.query.expr}"
        for r in results
        if r.error or not r.series
    ]
    panels = {r.query.panel for r in results}
    print(f"{len(results)} queries on {len(panels)} panels; {len(failures)} failed")
    for failure in failures:
        print(f"  {failure}")
    if args.picture:
        draw(results, args.picture)
        print(f"drew {args.picture}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

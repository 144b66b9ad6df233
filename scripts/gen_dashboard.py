"""Generates memex's Grafana dashboard (deploy/grafana/memex.json) with Grafana's foundation SDK.

The panels follow a request through the stack: the gateway, the orchestrator's stages, retrieval's
channels, embedding's batches, the reasoner's tokens, the chat worker's queue, then every RPC. The
JSON is committed; `--check` fails when it is stale. tests/e2e/test_dashboard.py evaluates every
panel's PromQL against a real Prometheus scraping a loaded stack.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "memex.json"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
HANDLED = "memex_grpc_server_handled_total"
RESTARTS = "memex_supervisor_restarts_total"


@dataclass(frozen=True)
class Query:
    """One line on a panel: its PromQL and its legend (``{{label}}`` templates)."""

    expr: str
    legend: str


@dataclass(frozen=True)
class PanelSpec:
    """One panel: a title, what it measures, its unit and its queries."""

    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]
    stat: bool = False


def p99(metric: str, by: str) -> str:
    """The 99th percentile of a histogram over the rate window, per ``by``."""
    return f"histogram_quantile(0.99, sum by (le, {by}) (rate({metric}_bucket[{RATE}])))"


def p50(metric: str, by: str) -> str:
    """The median of a histogram over the rate window, per ``by``."""
    return f"histogram_quantile(0.5, sum by (le, {by}) (rate({metric}_bucket[{RATE}])))"


def median_and_p99(metric: str, by: str) -> tuple[Query, Query]:
    """Two lines per ``by`` value: a histogram's median and 99th percentile."""
    return (
        Query(p50(metric, by), f"p50 {{{{{by}}}}}"),
        Query(p99(metric, by), f"p99 {{{{{by}}}}}"),
    )


def rate(metric: str, by: str) -> str:
    """A counter's per-second rate, summed per ``by``."""
    return f"sum by ({by}) (rate({metric}[{RATE}]))"


ROWS: dict[str, tuple[PanelSpec, ...]] = {
    "Gateway": (
        PanelSpec(
            "Services up",
            "1 when Prometheus's last scrape of the process succeeded.",
            "none",
            (Query("up", "{{job}}"),),
            stat=True,
        ),
        PanelSpec(
            "Requests by status",
            "HTTP requests per second, by status code (429 is rate limiting).",
            "reqps",
            (Query(rate("memex_gateway_requests_total", "status"), "{{status}}"),),
        ),
        PanelSpec(
            "Request latency p99",
            "Per route; a streamed route counts until its last event.",
            "s",
            (Query(p99("memex_gateway_request_seconds", "route"), "{{route}}"),),
        ),
        PanelSpec(
            "Open event streams",
            "Server-sent event streams open now, per route.",
            "short",
            (Query("sum by (route) (memex_gateway_open_streams)", "{{route}}"),),
        ),
    ),
    "Orchestrator": (
        PanelSpec(
            "Stage latency p50 and p99",
            "Plan, retrieve, generate and check, per answer.",
            "s",
            median_and_p99("memex_orchestrator_stage_seconds", "stage"),
        ),
        PanelSpec(
            "Asks and chats by outcome",
            "Answered, abstained, cancelled or failed, per second.",
            "ops",
            (
                Query(rate("memex_orchestrator_asks_total", "outcome"), "ask {{outcome}}"),
                Query(rate("memex_orchestrator_chats_total", "outcome"), "chat {{outcome}}"),
            ),
        ),
        PanelSpec(
            "Model calls by purpose and outcome",
            "Every audited reasoner call; audit_failed means the call was refused.",
            "ops",
            (
                Query(
                    rate("memex_orchestrator_model_calls_total", "purpose, outcome"),
                    "{{purpose}} {{outcome}}",
                ),
            ),
        ),
    ),
    "Retrieval": (
        PanelSpec(
            "Channel latency p99",
            "Each retrieval channel (vector, keyword, ...) of a search.",
            "s",
            (Query(p99("memex_retrieval_channel_seconds", "channel"), "{{channel}}"),),
        ),
        PanelSpec(
            "Channel hits (median)",
            "Candidates each channel returns per search.",
            "short",
            (Query(p50("memex_retrieval_channel_hits", "channel"), "{{channel}}"),),
        ),
        PanelSpec(
            "Query embedding p99",
            "The embedding call inside a search.",
            "s",
            (Query(p99("memex_retrieval_query_embed_seconds", "job"), "{{job}}"),),
        ),
    ),
    "Embedding": (
        PanelSpec(
            "Batch size (median and p99)",
            "Texts per ONNX Runtime batch: larger batches mean better throughput.",
            "short",
            median_and_p99("memex_embedding_batch_texts", "job"),
        ),
        PanelSpec(
            "Queue",
            "Texts waiting for a batch.",
            "short",
            (Query("sum by (job) (memex_embedding_queue_texts)", "queued texts"),),
        ),
        PanelSpec(
            "Tokens embedded per second",
            "Special tokens included.",
            "short",
            (Query(rate("memex_embedding_tokens_total", "job"), "tokens/s"),),
        ),
    ),
    "Reasoner": (
        PanelSpec(
            "Tokens per second",
            "Completion tokens generated per second, per model.",
            "short",
            (Query(rate("memex_reasoner_completion_tokens_total", "model"), "{{model}}"),),
        ),
        PanelSpec(
            "Time to first token p50 and p99",
            "From the request to the first generated token.",
            "s",
            median_and_p99("memex_reasoner_time_to_first_token_seconds", "model"),
        ),
        PanelSpec(
            "Active streams",
            "Generations running now.",
            "short",
            (Query("sum by (model) (memex_reasoner_active_streams)", "{{model}}"),),
        ),
    ),
    "Chat worker and supervisor": (
        PanelSpec(
            "Pending turns",
            "Queued chat turns not yet answered.",
            "short",
            (Query("max(memex_orchestrator_pending_turns)", "pending"),),
        ),
        PanelSpec(
            "Oldest pending turn",
            "How long the oldest queued turn has waited.",
            "s",
            (Query("max(memex_orchestrator_oldest_pending_turn_age_seconds)", "age"),),
        ),
        PanelSpec(
            "Turns by outcome",
            "Answered, requeued, lost or failed, per second.",
            "ops",
            (Query(rate("memex_orchestrator_worker_turns_total", "outcome"), "{{outcome}}"),),
        ),
        PanelSpec(
            "Restarts (last hour)",
            "Processes the supervisor restarted after they exited.",
            "short",
            (
                Query(
                    "sum by (service) (increase(memex_supervisor_restarts_total[1h]))",
                    "{{service}}",
                ),
            ),
        ),
    ),
    "RPCs": (
        PanelSpec(
            "Error ratio per RPC",
            "Share of calls that did not end OK (cancelled calls included).",
            "percentunit",
            (
                Query(
                    # `or ... * 0`: an RPC with no failures is 0, not missing from the panel.
                    f'(sum by (job, method) (rate({HANDLED}{{code!="OK"}}[{RATE}]))'
                    f" or sum by (job, method) (rate({HANDLED}[{RATE}])) * 0)"
                    f" / sum by (job, method) (rate({HANDLED}[{RATE}]))",
                    "{{job}} {{method}}",
                ),
            ),
        ),
        PanelSpec(
            "Latency p99 per RPC",
            "Server-side handling time.",
            "s",
            (
                Query(
                    p99("memex_grpc_server_handling_seconds", "job, method"), "{{job}} {{method}}"
                ),
            ),
        ),
    ),
}


def build() -> Dashboard:
    """The dashboard: one row per stage, panels two or four to a row."""
    dashboard = (
        Dashboard("memex")
        .uid("memex-overview")
        .description("A request through memex: gateway, stages, reasoner and the chat worker.")
        .tags(["memex"])
        .refresh("10s")
        .time("now-30m", "now")
        .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    for row, panels in ROWS.items():
        dashboard = dashboard.with_row(Row(row))
        width = 24 // len(panels)
        for spec in panels:
            panel = (Stat() if spec.stat else Timeseries()).title(spec.title)
            panel = panel.description(spec.description).unit(spec.unit).span(width).height(8)
            panel = panel.datasource(DATASOURCE)
            for ref, query in zip("ABCDEFGH", spec.queries, strict=False):
                panel = panel.with_target(
                    Dataquery().expr(query.expr).legend_format(query.legend).ref_id(ref)
                )
            dashboard = dashboard.with_panel(panel)
    return dashboard


def render() -> str:
    """The dashboard's JSON, as committed."""
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


def main() -> int:
    """Writes the dashboard, or with ``--check`` fails when the committed one is stale."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run `make dashboard`", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The gateway's Prometheus metrics (served at /metrics, beside the shared process metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from memex.shared.metrics import LATENCY_BUCKETS

REQUESTS = Counter(
    "memex_gateway_requests_total",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "memex_gateway_request_seconds",
    "From a request's arrival to the end of its response (a whole stream for SSE).",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
OPEN_STREAMS = Gauge("memex_gateway_open_streams", "Event streams open now.", ["route"])
RATE_LIMITED = Counter(
    "memex_gateway_rate_limited_total", "Requests refused with 429 by the per-key rate limit."
)

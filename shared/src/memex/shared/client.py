"""Outbound gRPC channels: keepalive, deadlines on every call, retries on UNAVAILABLE.

Retries use gRPC's own retry policy (service config), only for methods the caller names as
idempotent. Every call gets a timeout: the one given, else the channel default, and never more than
what is left of the inbound call's deadline, so a budget set at the edge holds end to end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import grpc

from memex.shared import internal_auth
from memex.shared.interceptors import REQUEST_ID_KEY, deadline_var
from memex.shared.logs import request_id_var
from memex.shared.settings import InternalAuthSettings

KEEPALIVE_TIME_MS = 30_000
"""How often a channel pings its server, with or without calls, to notice a dead peer.
Servers must accept pings this often (``server.MIN_PING_INTERVAL_MS``)."""


def _budget(timeout: float | None, default: float) -> float:
    timeout = default if timeout is None else timeout
    deadline = deadline_var.get()
    if deadline is not None:
        timeout = min(timeout, max(deadline - time.monotonic(), 0.001))
    return timeout


def _metadata(metadata: Any, credential: tuple[tuple[str, str], ...]) -> grpc.aio.Metadata:
    out = grpc.aio.Metadata(*(tuple(metadata) if metadata else ()), *credential)
    request_id = request_id_var.get()
    if request_id != "-" and out.get(REQUEST_ID_KEY) is None:
        out.add(REQUEST_ID_KEY, request_id)
    return out


class _CallDefaults:
    """Adds the timeout, the request id and the internal credential to every outbound call."""

    def __init__(self, default_timeout: float, credential: tuple[tuple[str, str], ...]) -> None:
        self._default = default_timeout
        self._credential = credential

    def _details(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        return grpc.aio.ClientCallDetails(
            method=details.method,
            timeout=_budget(details.timeout, self._default),
            metadata=_metadata(details.metadata, self._credential),
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )


# grpc.aio files an interceptor under the first call kind it implements only, so one class that
# is both would never see server-streaming calls (Chat, AskStream, Generate, IndexVault).
class _UnaryCallDefaults(_CallDefaults, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _StreamCallDefaults(_CallDefaults, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


ROUND_ROBIN: list[dict[str, dict[str, str]]] = [{"round_robin": {}}]
"""Every channel spreads its calls over all the addresses its target resolves to (a Kubernetes
headless Service's pods, or ``ipv4:a:p,b:p``), rather than pinning to the first one (gRPC's
default, pick_first), so two replicas of a stage share its load."""


def retry_config(service: str, idempotent_methods: Iterable[str], max_attempts: int = 4) -> str:
    """A gRPC service config: round-robin over the target's addresses, and retries of the named
    methods on UNAVAILABLE with backoff."""
    methods = [{"service": service, "method": name} for name in idempotent_methods]
    if not methods:
        return json.dumps({"loadBalancingConfig": ROUND_ROBIN, "methodConfig": []})
    return json.dumps(
        {
            "loadBalancingConfig": ROUND_ROBIN,
            "methodConfig": [
                {
                    "name": methods,
                    "retryPolicy": {
                        "maxAttempts": max_attempts,
                        "initialBackoff": "0.1s",
                        "maxBackoff": "2s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE"],
                    },
                }
            ],
        }
    )


def open_channel(
    address: str,
    *,
    service: str = "",
    idempotent_methods: Iterable[str] = (),
    default_timeout: float = 30.0,
    max_message_bytes: int = 32 * 1024 * 1024,
    auth: InternalAuthSettings | None = None,
) -> grpc.aio.Channel:
    """A channel with memex's call defaults and the deployment's internal credential (``auth``;
    default ``MEMEX_INTERNAL_*`` from the environment): TLS with this process's certificate, a
    token on every call, or plaintext on loopback.

    ``service`` is the full proto service name whose ``idempotent_methods`` may be retried.
    """
    auth = auth or internal_auth.from_env()
    options: list[tuple[str, Any]] = [
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", retry_config(service, idempotent_methods)),
    ]
    return internal_auth.channel(
        address,
        auth,
        options=options,
        interceptors=[
            kind(default_timeout, internal_auth.call_metadata(auth))
            for kind in (_UnaryCallDefaults, _StreamCallDefaults)
        ],
    )

"""Bearer API keys and the per-key rate limit, as one FastAPI dependency on every /v1 route."""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import grpc
from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memex.gateway import metrics
from memex.gateway.apikeys import KeyRing
from memex.gateway.errors import ApiError
from memex.shared.errors import MemexError

bearer = HTTPBearer(auto_error=False, description="A key from `memex keys create NAME`.")


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """A token bucket per caller: ``burst`` requests at once, refilled at ``per_minute``.

    Only the most recently seen callers are remembered, so a flood of client addresses cannot grow
    memory without bound (a forgotten caller starts again with a full bucket).
    """

    def __init__(self, per_minute: float, burst: int, max_callers: int = 10_000) -> None:
        self.rate = per_minute / 60.0
        self.burst = burst
        self.max_callers = max_callers
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, caller: str, now: float | None = None) -> float:
        """Takes one token; returns 0 when allowed, else the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        bucket = self._buckets.pop(caller, None) or _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        self._buckets[caller] = bucket
        while len(self._buckets) > self.max_callers:
            self._buckets.popitem(last=False)
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate


@dataclass
class Guard:
    """What the dependency needs: the key ring, whether keys are required, the limiter."""

    keys: KeyRing
    required: bool
    limiter: RateLimiter


def _unauthenticated(message: str) -> ApiError:
    error = ApiError(grpc.StatusCode.UNAUTHENTICATED, message)
    error.headers["WWW-Authenticate"] = "Bearer"
    return error


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> str:
    """Who is calling: ``key:<name>``, or ``client:<address>`` where keys are optional.

    Where keys are optional, a key that matches none is ignored rather than refused: OpenAI
    clients always send some key, and they must work unchanged against a loopback gateway.
    Then the caller's rate limit applies.
    """
    guard: Guard = request.app.state.guard
    key = None
    if credentials is not None:
        try:
            key = guard.keys.verify(credentials.credentials)
        except MemexError as exc:  # a damaged key file: refuse, and say where to look
            raise ApiError(grpc.StatusCode.UNAVAILABLE, exc.message) from exc
    default_tenant: str = request.app.state.settings.tenant
    if key is not None:
        who = f"key:{key.name}"
        request.state.reads_sensitive = key.sensitive
        # The key's tenant and no other: nothing in a request can widen it.
        request.state.tenant = key.tenant or default_tenant
        request.state.admin = key.admin
        request.state.operator = key.admin or not key.tenant
    elif guard.required:
        raise _unauthenticated(
            "the API key is not valid (revoked, or mistyped)"
            if credentials is not None
            else "an API key is required: send `Authorization: Bearer <key>` "
            "(make one with `memex keys create NAME`)"
        )
    else:
        host = request.client.host if request.client else "unknown"
        who = f"client:{host}"
        # Keys are optional only for a loopback gateway: a keyless caller is the owner at their
        # own machine, who may read their sensitive notes when they ask (issue 11).
        request.state.reads_sensitive = _is_loopback(host)
        request.state.tenant = default_tenant
        # The same owner may manage keys, as they could with `memex keys` at that machine.
        request.state.admin = _is_loopback(host)
        request.state.operator = True  # the default tenant's caller, as keys made without one
    wait = guard.limiter.take(who)
    if wait > 0:
        metrics.RATE_LIMITED.inc()
        error = ApiError(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"rate limit reached for {who.split(':', 1)[0]}; retry in {math.ceil(wait)}s",
        )
        error.headers["Retry-After"] = str(math.ceil(wait))
        raise error
    return who


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def tenant(request: Request, who: Annotated[str, Depends(caller)]) -> str:
    """The caller's tenant, every read and write of the request is scoped to: its key's, or the
    gateway's configured tenant for a keyless loopback caller ("" is the services' default)."""
    result: str = request.state.tenant
    return result


def _granted(flag: str, refusal: str) -> Callable[..., Awaitable[str]]:
    """A dependency that passes the caller when ``caller`` set ``request.state.<flag>``, and
    answers 403 with ``refusal`` (saying what grants it) otherwise."""

    async def check(request: Request, who: Annotated[str, Depends(caller)]) -> str:
        if not getattr(request.state, flag, False):
            raise ApiError(grpc.StatusCode.PERMISSION_DENIED, refusal)
        return who

    return check


admin = _granted(
    "admin",
    "this API key may not manage keys; use a key made with `memex keys create NAME --admin`",
)
"""The caller, when it may manage keys (an admin key, or a keyless loopback caller)."""

operator = _granted(
    "operator",
    "the metrics count every tenant's requests, so a key bound to one tenant may not read them; "
    "use a key made without --tenant, or an admin key",
)
"""The caller, when it may read what covers every tenant (``/metrics``): a key made without
``--tenant`` (the deployment's own, Prometheus's among them), an admin key, or a keyless caller;
a key bound to a tenant gets 403, since the counts include other tenants' requests."""


TenantDep = Annotated[str, Depends(tenant)]
"""The caller's tenant (see ``tenant``)."""


def sensitive_grant(request: Request, asked: bool) -> bool:
    """Whether this read includes sensitive items: only when the caller ``asked`` AND may (a key
    made with ``--sensitive``, or a keyless loopback caller). Asking without the grant is a 403
    saying how to get it, not a silent omission."""
    if not asked:
        return False
    if not getattr(request.state, "reads_sensitive", False):
        raise ApiError(
            grpc.StatusCode.PERMISSION_DENIED,
            "this API key may not read sensitive items; make a key that may with "
            "`memex keys create NAME --sensitive`, or leave include_sensitive false",
        )
    return True


SensitiveReplies = Annotated[
    bool,
    Query(
        description="Show replies that drew on sensitive notes (else placeholders); allowed to a "
        "key granted sensitive reads, or a keyless loopback caller (403 otherwise)."
    ),
]
"""The ``include_sensitive`` of a replay (a conversation's messages, a thread's turns); the
caller's grant is checked with ``sensitive_grant``."""

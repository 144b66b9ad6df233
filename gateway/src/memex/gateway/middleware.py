"""ASGI middleware: request ids, metrics and the body size limit.

Plain ASGI rather than BaseHTTPMiddleware, so event streams pass through unbuffered and a
client's disconnect reaches the route.
"""

from __future__ import annotations

import json
import re
import time
import uuid

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memex.gateway import metrics
from memex.shared.logs import request_id_var

REQUEST_ID_HEADER = b"x-request-id"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class RequestContext:
    """Gives every request an id (the client's X-Request-ID if sane, else a new one), echoes it,
    and counts the request by route template and status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(REQUEST_ID_HEADER, b"").decode("latin-1")
        request_id = given if _SAFE_ID.match(given) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID_HEADER, request_id.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"]
            metrics.REQUESTS.labels(route, method, str(status)).inc()
            metrics.REQUEST_SECONDS.labels(route, method).observe(time.perf_counter() - started)
            request_id_var.reset(token)


class _TooLarge(HTTPException):
    """Raised from ``receive``: FastAPI passes HTTPExceptions raised while reading a body on to
    its handler (other errors there become a generic 400)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"request body is larger than {max_bytes} bytes")


class BodyLimit:
    """Refuses bodies over ``max_bytes`` with 413: at once when Content-Length says so, else as
    soon as the streamed body passes the limit (before the route sees it)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refusal(self) -> list[Message]:
        body = json.dumps(
            {
                "error": {
                    "code": "RESOURCE_EXHAUSTED",
                    "message": f"request body is larger than {self.max_bytes} bytes",
                }
            }
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        return [
            {"type": "http.response.start", "status": 413, "headers": headers},
            {"type": "http.response.body", "body": body},
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            for message in self._refusal():
                await send(message)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if started:
                raise
            for message in self._refusal():
                await send(message)

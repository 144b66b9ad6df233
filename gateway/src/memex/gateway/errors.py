"""The one place where gRPC status codes (and domain errors) become HTTP statuses.

Every error response has the same body, ``{"error": {"code", "message"}}``, with ``code`` the gRPC
status name, so a client handles one shape whatever failed. On the OpenAI-compatible routes the body
also carries OpenAI's ``type`` and ``param``, so it is OpenAI's error shape as well (OpenAI's own
``code`` is a free string; ours stays the status name).
"""

from __future__ import annotations

import logging

import grpc
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from memex.shared import errors
from memex.shared.grpc_errors import INTERNAL_MESSAGE, status_for
from memex.shared.logs import request_id_var

log = logging.getLogger(__name__)

HTTP_STATUS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    # 499 is nginx's "client closed request": the caller gave up, nobody reads this response.
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
"""Anything not listed (UNKNOWN, INTERNAL, UNIMPLEMENTED, DATA_LOSS) is 500."""


def http_status(code: grpc.StatusCode) -> int:
    """The HTTP status of a gRPC status code."""
    return HTTP_STATUS.get(code, 500)


OPENAI_ROUTES = ("/v1/chat/completions", "/v1/models")
OPENAI_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
}
"""OpenAI's error ``type`` by HTTP status: other 4xx are ``invalid_request_error``, 5xx (and 499)
``server_error``."""


def is_openai_route(path: str) -> bool:
    """Whether ``path`` is an OpenAI-compatible route (whose errors take OpenAI's shape)."""
    return any(path == route or path.startswith(route + "/") for route in OPENAI_ROUTES)


def error_body(
    code: str, message: str, status: int, request: Request | None = None, param: str | None = None
) -> dict[str, dict[str, str | None]]:
    """The JSON error body; with OpenAI's ``type`` and ``param`` on the OpenAI-compatible routes."""
    detail: dict[str, str | None] = {"code": code, "message": message}
    if request is not None and is_openai_route(request.url.path):
        detail["type"] = openai_type(status)
        detail["param"] = param
    return {"error": detail}


def openai_type(status: int) -> str:
    """OpenAI's error ``type`` for an HTTP status (``OPENAI_TYPES``)."""
    return OPENAI_TYPES.get(status, "invalid_request_error" if status < 499 else "server_error")


class ApiError(Exception):
    """An error the gateway answers with: a gRPC status name, an HTTP status and a message."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        http: int | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http = http if http is not None else http_status(code)
        # The request field at fault, when one is (shown on the OpenAI-compatible routes).
        self.param = param
        self.headers: dict[str, str] = {}

    @classmethod
    def from_rpc(cls, exc: grpc.aio.AioRpcError) -> ApiError:
        """A peer's failure, passed on. Its details are the peer's client-facing message (the
        services never put internals there), except for statuses without a domain meaning."""
        code = exc.code()
        if http_status(code) == 500:
            log.error("upstream failed with %s: %s", code.name, exc.details())
            message = INTERNAL_MESSAGE.format(request_id=request_id_var.get())
            return cls(grpc.StatusCode.INTERNAL, message)
        details = exc.details() or code.name
        if code == grpc.StatusCode.UNAVAILABLE and "connect" in details.lower():
            # The channel's own words ("failed to connect to all addresses; ...") help nobody.
            log.warning("upstream unreachable: %s", details)
            details = "a memex service is not reachable; is the stack up (`memex status`)?"
        return cls(code, details)

    @classmethod
    def from_domain(cls, exc: errors.MemexError) -> ApiError:
        """A domain error raised inside the gateway."""
        return cls(status_for(exc), exc.message)

    def body(self, request: Request | None = None) -> dict[str, dict[str, str | None]]:
        """The JSON error body (in OpenAI's shape too when ``request`` is to an OpenAI route)."""
        return error_body(self.code.name, self.message, self.http, request, self.param)

    def response(self, request: Request | None = None) -> JSONResponse:
        """The HTTP response."""
        return JSONResponse(self.body(request), status_code=self.http, headers=self.headers)


def error_json(
    code: str, message: str, status: int, request: Request | None = None
) -> JSONResponse:
    """An error response with an explicit code name (for statuses outside the gRPC table)."""
    return JSONResponse(error_body(code, message, status, request), status_code=status)


async def handle_api_error(request: Request, exc: Exception) -> JSONResponse:
    """ApiError → its response."""
    assert isinstance(exc, ApiError)
    return exc.response(request)


async def handle_rpc_error(request: Request, exc: Exception) -> JSONResponse:
    """A gRPC failure that a route did not translate → the table."""
    assert isinstance(exc, grpc.aio.AioRpcError)
    return ApiError.from_rpc(exc).response(request)


async def handle_domain_error(request: Request, exc: Exception) -> JSONResponse:
    """A domain error → the table, through its gRPC status."""
    assert isinstance(exc, errors.MemexError)
    return ApiError.from_domain(exc).response(request)


async def handle_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 becomes 400 INVALID_ARGUMENT with a message naming the fields."""
    assert isinstance(exc, RequestValidationError)
    problems = []
    fields = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
        fields.append(where)
    message = "invalid request: " + "; ".join(problems) if problems else "invalid request"
    param = fields[0] if fields else None
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, message, param=param).response(request)


_CODE_BY_HTTP = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "INVALID_ARGUMENT",
    409: "ALREADY_EXISTS",
    413: "RESOURCE_EXHAUSTED",
    429: "RESOURCE_EXHAUSTED",
}


async def handle_http_exception(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (unknown path, wrong method) in the same JSON shape."""
    assert isinstance(exc, HTTPException)
    code = _CODE_BY_HTTP.get(exc.status_code, "INTERNAL" if exc.status_code >= 500 else "UNKNOWN")
    response = error_json(code, str(exc.detail), exc.status_code, request)
    if exc.headers:
        response.headers.update(exc.headers)
    if exc.status_code == 405:
        # Starlette names the methods of the first route matching the path only; a path served by
        # several routes (GET and DELETE of a conversation) allows all of theirs.
        response.headers["Allow"] = ", ".join(sorted(allowed_methods(request)))
    return response


def allowed_methods(request: Request) -> set[str]:
    """Every method some route serves at the request's path."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "__NONE__"})
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return methods


async def handle_unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug: a fixed message with the request id; the traceback goes to the log only."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    message = INTERNAL_MESSAGE.format(request_id=request_id_var.get())
    return error_json("INTERNAL", message, 500, request)

"""The FastAPI application: ``create_app(settings)`` wires routes, middleware and error handlers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from memex.gateway import errors
from memex.gateway.apikeys import KeyRing
from memex.gateway.clients import open_clients
from memex.gateway.config import GatewaySettings
from memex.gateway.continuations import Continuations
from memex.gateway.middleware import BodyLimit, RequestContext
from memex.gateway.models.common import ErrorBody
from memex.gateway.routes import (
    admin,
    ask,
    beliefs,
    chat,
    conversations,
    evidence,
    notes,
    openai_compat,
    personas,
    records,
    system,
    turns,
)
from memex.gateway.security import Guard, RateLimiter
from memex.shared.errors import MemexError

log = logging.getLogger(__name__)

REF = "#/components/schemas/{model}"
ERROR_400: dict[str, Any] = {
    "description": "Invalid request: malformed JSON, or a field missing or out of range.",
    "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorBody")}}},
}

DESCRIPTION = """memex over HTTP: cited answers, streamed chat (server-sent events), search,
records, conversations and queued turns, plus an OpenAI-compatible chat completions endpoint.
Errors are `{"error": {"code", "message"}}` with `code` a gRPC status name. Send
`Authorization: Bearer <key>` where keys are required (always off loopback). A key belongs to one
tenant and sees only its memory; another tenant's items are 404, like missing ones. Admin keys
manage keys for any tenant under `/v1/admin/keys`."""


class StartupError(Exception):
    """The gateway must not start as configured; the message says what to change."""


def check_startup(settings: GatewaySettings) -> None:
    """Refuses a configuration that would expose memex without keys."""
    if not settings.keys_required:
        return
    keys = KeyRing(settings.keys_file)
    try:
        found = keys.keys()
    except MemexError as exc:
        raise StartupError(exc.message) from exc
    if not found:
        where = (
            f"MEMEX_GATEWAY_HOST={settings.host} is not loopback"
            if not settings.require_keys
            else "MEMEX_GATEWAY_REQUIRE_KEYS is set"
        )
        raise StartupError(
            f"API keys are required ({where}) but {settings.keys_file} holds none: create one "
            "with `memex keys create NAME`, or bind to 127.0.0.1"
        )


def _spec_with_400s(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """FastAPI documents 422 for invalid input; this gateway answers 400 (see errors.py), so
    the published spec says 400, in the same error shape as every other error."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            for path in spec["paths"].values():
                for operation in path.values():
                    responses = operation.setdefault("responses", {})
                    responses.pop("422", None)
                    responses.setdefault("400", ERROR_400)
            schemas = spec.get("components", {}).get("schemas", {})
            schemas.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template=REF))
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            app.openapi_schema = spec
        return app.openapi_schema

    return openapi


def create_app(settings: GatewaySettings) -> FastAPI:
    """The gateway for ``settings``; gRPC channels open in the lifespan and close after it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.clients = open_clients(settings)
        try:
            yield
        finally:
            await app.state.clients.close()

    app = FastAPI(
        title="memex gateway",
        version="1",
        description=DESCRIPTION,
        lifespan=lifespan,
        # FastAPI's docs pages load their scripts from a CDN; memex never phones home.
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = _spec_with_400s(app)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.continuations = Continuations()
    app.state.guard = Guard(
        keys=KeyRing(settings.keys_file),
        required=settings.keys_required,
        limiter=RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst),
    )
    for router in (
        system.router,
        ask.router,
        chat.router,
        openai_compat.router,
        personas.router,
        records.router,
        conversations.router,
        turns.router,
        notes.router,
        evidence.router,
        beliefs.router,
        admin.router,
    ):
        app.include_router(router)
    # check_dir=False: the page may not be installed; /static then answers 404.
    app.mount("/static", StaticFiles(directory=settings.web_dir, check_dir=False), name="static")

    app.add_exception_handler(errors.ApiError, errors.handle_api_error)
    app.add_exception_handler(grpc.aio.AioRpcError, errors.handle_rpc_error)
    app.add_exception_handler(MemexError, errors.handle_domain_error)
    app.add_exception_handler(RequestValidationError, errors.handle_validation_error)
    app.add_exception_handler(HTTPException, errors.handle_http_exception)
    app.add_exception_handler(Exception, errors.handle_unexpected)

    # Added innermost first: the body limit sits next to the routes, CORS outside it (so even
    # refusals carry CORS headers), and the request context outermost (every response counted).
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    app.add_middleware(RequestContext)
    return app

"""Dependencies the routes share: the service clients, the settings, and the error responses
every /v1 route documents."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from memex.gateway.clients import Clients
from memex.gateway.config import GatewaySettings
from memex.gateway.models.common import ErrorBody


def clients(request: Request) -> Clients:
    """The open gRPC clients (made in the app's lifespan)."""
    result: Clients = request.app.state.clients
    return result


def settings(request: Request) -> GatewaySettings:
    """The gateway's settings."""
    result: GatewaySettings = request.app.state.settings
    return result


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _error("Invalid request (malformed JSON, a field out of range, a bad filter)."),
    401: _error("Missing or invalid API key."),
    403: _error("Not allowed (e.g. a collection outside the allowlist)."),
    404: _error("No such conversation, turn, thread, person or path."),
    409: _error("Conflicts with existing state."),
    413: _error("Request body over the size limit."),
    429: _error("Rate limit reached (see Retry-After) or a service queue is full."),
    499: _error("The client went away before the answer."),
    500: _error("A bug; the message carries the request id to find it in the logs."),
    503: _error("A service is down or still loading; retry."),
    504: _error("The answer took longer than the deadline."),
}
"""Every error status a /v1 route can answer with, documented on each of them."""


ClientsDep = Annotated[Clients, Depends(clients)]
SettingsDep = Annotated[GatewaySettings, Depends(settings)]

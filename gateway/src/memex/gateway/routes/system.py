"""Health, metrics and the web page: the routes that need no API key."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from memex.gateway.config import GatewaySettings
from memex.gateway.deps import ERRORS, SettingsDep
from memex.gateway.errors import error_json
from memex.gateway.models.common import Health
from memex.gateway.security import operator
from memex.shared.health import check, check_http

router = APIRouter(tags=["system"])


async def _probe(target: str) -> str:
    if target.startswith(("http://", "https://")):
        return await check_http(target)
    return await check(target)


@router.get(
    "/healthz",
    response_model=Health,
    responses={503: {"model": Health, "description": "A service is not serving."}},
    summary="Health",
)
async def healthz(
    s: SettingsDep,
    deep: bool = Query(False, description="Also check every stack service."),
) -> JSONResponse:
    """Shallow: the gateway answers. Deep: every service's health, 503 unless all SERVING."""
    if not deep:
        return JSONResponse(Health(status="ok").model_dump(exclude_none=True))
    targets = s.deep_checks()
    results = await asyncio.gather(*(_probe(t) for t in targets.values()))
    services = dict(zip(targets, results, strict=True))
    healthy = all(status == "SERVING" for status in services.values())
    body = Health(status="ok" if healthy else "degraded", services=services)
    return JSONResponse(body.model_dump(), status_code=200 if healthy else 503)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    # behind the API key where keys are required; not for a key bound to one tenant
    dependencies=[Depends(operator)],
    responses={**ERRORS, 200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def prometheus_metrics() -> Response:
    """Request counts and latency by route and status, open event streams, process metrics."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def _page(s: GatewaySettings) -> Response:
    index = s.web_dir / "index.html"
    if not index.is_file():
        return error_json("NOT_FOUND", "the web page is not installed", 404)
    return FileResponse(index, media_type="text/html")


@router.get(
    "/",
    summary="The web chat page",
    response_class=Response,
    responses={404: ERRORS[404], 200: {"content": {"text/html": {"schema": {"type": "string"}}}}},
)
async def index(s: SettingsDep) -> Response:
    """The web chat page (its assets are under /static)."""
    return _page(s)


@router.get(
    "/notes/{episode_id}",
    summary="A note, opened in the web page",
    response_class=Response,
    responses={404: ERRORS[404], 200: {"content": {"text/html": {"schema": {"type": "string"}}}}},
)
async def note_page(s: SettingsDep, episode_id: str) -> Response:
    """The web page; it reads the episode id from the address and renders the note."""
    return _page(s)

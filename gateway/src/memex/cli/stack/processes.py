"""The stack's processes that are memex's own: a service definition (``ServiceDef``), and how each
of memex's gRPC services, the queued-turn worker, the local PostgreSQL and the HTTP gateway is
started, with its environment, from the stack settings (``memex.shared.stack_settings``). Weaviate's
are ``weaviate``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from memex.shared.stack_settings import StackSettings


@dataclass(frozen=True)
class ServiceDef:
    """One service process of the stack."""

    name: str
    module: str
    address: str
    health_service: str
    env: dict[str, str] = field(default_factory=dict)
    health_url: str | None = None
    """Set for a non-gRPC process (Weaviate): healthy when this URL answers 2xx."""
    group: str = ""
    """Services of one group (a Weaviate cluster's nodes) are started together, then checked."""


def grpc_service(settings: StackSettings, stage: str, **env: str) -> ServiceDef:
    """One of memex's own gRPC services: ``python -m memex.<stage>`` on its stack ports."""
    prefix = f"MEMEX_{stage.upper()}_"
    return ServiceDef(
        name=stage,
        module=f"memex.{stage}",
        address=f"{settings.host}:{getattr(settings, f'{stage}_port')}",
        health_service=f"memex.{stage}.v1.{stage.capitalize()}Service",
        env={
            f"{prefix}HOST": settings.host,
            f"{prefix}PORT": str(getattr(settings, f"{stage}_port")),
            f"{prefix}METRICS_PORT": str(getattr(settings, f"{stage}_metrics_port")),
            **{f"{prefix}{name.upper()}": value for name, value in env.items()},
        },
    )


def gateway_service(settings: StackSettings, upstream: list[ServiceDef]) -> ServiceDef:
    """The HTTP gateway, last: its deep health check asks every service started before it."""
    host, port = settings.host, settings.gateway_port
    checks = {s.name: s.health_url or s.address for s in upstream if s.health_url or s.address}
    return ServiceDef(
        name="gateway",
        module="memex.gateway",
        address=f"{host}:{port}",
        health_service="",
        health_url=f"http://{host}:{port}/healthz",
        env={
            "MEMEX_GATEWAY_HOST": host,
            "MEMEX_GATEWAY_PORT": str(port),
            "MEMEX_GATEWAY_ORCHESTRATOR_ADDR": settings.orchestrator_addr,
            "MEMEX_GATEWAY_RETRIEVAL_ADDR": settings.retrieval_addr,
            "MEMEX_GATEWAY_KEYS_FILE": str(settings.data_dir / "gateway" / "keys.json"),
            "MEMEX_GATEWAY_HEALTH_CHECKS": json.dumps(checks),
        },
    )


def postgres_service(settings: StackSettings) -> ServiceDef:
    """The local PostgreSQL of ``--state postgres`` (``memex.orchestrator.state.postgres_server``):
    created once in ``postgres_dir``, on loopback; healthy once its memex database accepts
    connections (its launcher's gRPC health)."""
    return ServiceDef(
        name="postgres",
        module="memex.orchestrator.state.postgres_server",
        address=f"{settings.host}:{settings.postgres_health_port}",
        health_service="",
        env={
            "MEMEX_POSTGRES_HOST": settings.host,
            "MEMEX_POSTGRES_PORT": str(settings.postgres_port),
            "MEMEX_POSTGRES_HEALTH_PORT": str(settings.postgres_health_port),
            "MEMEX_POSTGRES_DIR": str(settings.postgres_dir),
        },
    )


def worker_service(settings: StackSettings, orchestrator: ServiceDef) -> ServiceDef:
    """The queued-turn chat worker (SPEC B13): the orchestrator's settings and state, its own
    health and metrics ports. It serves only gRPC health, so the whole server's status is probed."""
    return ServiceDef(
        name="worker",
        module="memex.orchestrator.queue.worker",
        address=f"{settings.host}:{settings.worker_port}",
        health_service="",
        env={
            **orchestrator.env,
            "MEMEX_ORCHESTRATOR_WORKER_PORT": str(settings.worker_port),
            "MEMEX_ORCHESTRATOR_WORKER_METRICS_PORT": str(settings.worker_metrics_port),
        },
    )

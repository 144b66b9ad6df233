"""The stack: which services run, in which order, each with its own environment.

One place turns the stack settings (``MEMEX_...``, ``memex.shared.stack_settings``) into each
service's own environment (``MEMEX_<STAGE>_...``), so the supervisor, the CLI and tests agree on
addresses. Each process is defined in ``processes`` (memex's own, and PostgreSQL) or ``weaviate``
(the Weaviate server or cluster); ``stack_services`` here puts them in start order.
"""

from __future__ import annotations

from memex.cli.stack.processes import (
    ServiceDef,
    gateway_service,
    grpc_service,
    postgres_service,
    worker_service,
)
from memex.cli.stack.weaviate import retrieval_store_env, weaviate_services
from memex.shared.stack_settings import StackSettings


def stack_services(settings: StackSettings) -> list[ServiceDef]:
    """The services in start order (a service starts after those it calls). The reasoner's
    engine and model come from the MEMEX_REASONER_* variables the stack inherits."""
    stores = weaviate_services(settings) if settings.store == "weaviate" else []
    retrieval = grpc_service(
        settings,
        "retrieval",
        embedding_addr=settings.embedding_addr,
        store_dir=str(settings.data_dir / "retrieval"),
    )
    retrieval.env.update(retrieval_store_env(settings))
    orchestrator = grpc_service(
        settings,
        "orchestrator",
        retrieval_addr=settings.retrieval_addr,
        reasoner_addr=settings.reasoner_addr,
        data_dir=str(settings.data_dir / "orchestrator"),
        personas_dir=str(settings.data_dir / "personas"),
    )
    if settings.runs_postgres:
        stores.append(postgres_service(settings))
        orchestrator.env["MEMEX_ORCHESTRATOR_STATE_URL"] = settings.postgres_url
    services = [
        *stores,
        grpc_service(settings, "embedding"),
        retrieval,
        grpc_service(settings, "reasoner"),
        orchestrator,
        worker_service(settings, orchestrator),
    ]
    return [*services, gateway_service(settings, services)]

"""The stack: which services run, on which loopback ports, with which settings.

One place turns the stack settings (``MEMEX_...``) into each service's own environment
(``MEMEX_<STAGE>_...``), so the supervisor, the CLI and tests agree on addresses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memex.shared.settings import default_data_dir


class StackSettings(BaseSettings):
    """Settings of the whole local stack (``MEMEX_...``)."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_")

    host: str = Field("127.0.0.1", description="Address every service binds to.")
    data_dir: Path = Field(default_factory=default_data_dir, description="State, logs, pid files.")
    embedding_port: int = Field(50051, ge=1, le=65535, description="Embedding gRPC port.")
    embedding_metrics_port: int = Field(9151, ge=1, le=65535, description="Embedding /metrics.")
    orchestrator_port: int = Field(50054, ge=1, le=65535, description="Orchestrator gRPC port.")
    retrieval_port: int = Field(50052, ge=1, le=65535, description="Retrieval gRPC port.")
    retrieval_metrics_port: int = Field(9152, ge=1, le=65535, description="Retrieval /metrics.")
    reasoner_port: int = Field(50053, ge=1, le=65535, description="Reasoner gRPC port.")
    reasoner_metrics_port: int = Field(9153, ge=1, le=65535, description="Reasoner /metrics.")
    start_timeout_seconds: float = Field(
        180.0, gt=0, description="How long `memex up` waits for every service to be healthy."
    )
    restart_backoff_max_seconds: float = Field(
        30.0, gt=0, description="Longest wait before restarting a service that keeps crashing."
    )

    @property
    def run_dir(self) -> Path:
        """Supervisor pid and state files."""
        return self.data_dir / "run"

    @property
    def log_dir(self) -> Path:
        """One log file per service."""
        return self.data_dir / "logs"

    @property
    def orchestrator_addr(self) -> str:
        """Address of the orchestrator."""
        return f"{self.host}:{self.orchestrator_port}"

    @property
    def embedding_addr(self) -> str:
        """Address of the embedding service."""
        return f"{self.host}:{self.embedding_port}"

    @property
    def retrieval_addr(self) -> str:
        """Address of the retrieval service."""
        return f"{self.host}:{self.retrieval_port}"

    @property
    def reasoner_addr(self) -> str:
        """Address of the reasoner service."""
        return f"{self.host}:{self.reasoner_port}"


@dataclass(frozen=True)
class ServiceDef:
    """One service process of the stack."""

    name: str
    module: str
    address: str
    health_service: str
    env: dict[str, str] = field(default_factory=dict)


def stack_services(settings: StackSettings) -> list[ServiceDef]:
    """The services in start order (a service starts after those it calls)."""
    return [
        ServiceDef(
            name="embedding",
            module="memex.embedding",
            address=settings.embedding_addr,
            health_service="memex.embedding.v1.EmbeddingService",
            env={
                "MEMEX_EMBEDDING_HOST": settings.host,
                "MEMEX_EMBEDDING_PORT": str(settings.embedding_port),
                "MEMEX_EMBEDDING_METRICS_PORT": str(settings.embedding_metrics_port),
            },
        ),
        ServiceDef(
            name="retrieval",
            module="memex.retrieval",
            address=settings.retrieval_addr,
            health_service="memex.retrieval.v1.RetrievalService",
            env={
                "MEMEX_RETRIEVAL_HOST": settings.host,
                "MEMEX_RETRIEVAL_PORT": str(settings.retrieval_port),
                "MEMEX_RETRIEVAL_METRICS_PORT": str(settings.retrieval_metrics_port),
                "MEMEX_RETRIEVAL_EMBEDDING_ADDR": settings.embedding_addr,
                "MEMEX_RETRIEVAL_STORE_DIR": str(settings.data_dir / "retrieval"),
            },
        ),
        # Its engine and model come from the MEMEX_REASONER_* variables the stack inherits.
        ServiceDef(
            name="reasoner",
            module="memex.reasoner",
            address=settings.reasoner_addr,
            health_service="memex.reasoner.v1.ReasonerService",
            env={
                "MEMEX_REASONER_HOST": settings.host,
                "MEMEX_REASONER_PORT": str(settings.reasoner_port),
                "MEMEX_REASONER_METRICS_PORT": str(settings.reasoner_metrics_port),
            },
        ),
    ]

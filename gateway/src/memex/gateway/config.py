"""Gateway settings (``MEMEX_GATEWAY_...``)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from memex.gateway.apikeys import keys_path
from memex.shared.settings import default_data_dir


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the gateway on this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


class GatewaySettings(BaseSettings):
    """Everything the HTTP gateway reads from the environment."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_GATEWAY_")

    host: str = Field("127.0.0.1", description="Address the HTTP server binds to.")
    port: int = Field(8765, ge=0, le=65535, description="HTTP port; 0 picks a free one.")
    orchestrator_addr: str = Field(
        "127.0.0.1:50054", description="Address of the orchestrator service."
    )
    retrieval_addr: str = Field("127.0.0.1:50052", description="Address of the retrieval service.")
    require_keys: bool = Field(
        False,
        description="Demand a bearer API key on loopback too (always demanded on other hosts).",
    )
    keys_file: Path = Field(
        default_factory=lambda: keys_path(default_data_dir()),
        description="The API key file `memex keys` writes (hashes only).",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description='Origins a browser may call from, as JSON (e.g. ["http://localhost:3000"]).',
    )
    max_body_bytes: int = Field(
        1024 * 1024, gt=0, description="Largest request body accepted; larger gets 413."
    )
    rate_limit_per_minute: float = Field(
        120.0, ge=0, description="Requests per minute per API key (or client address); 0: none."
    )
    rate_limit_burst: int = Field(
        20, ge=1, description="Requests a key may make at once before the per-minute rate applies."
    )
    sse_ping_seconds: float = Field(
        15.0, gt=0, description="Keep-alive comment interval on an idle event stream."
    )
    request_timeout_seconds: float = Field(
        300.0,
        gt=0,
        description="Deadline of a JSON call to a service, and of an ask, streamed or not.",
    )
    chat_timeout_seconds: float = Field(
        600.0, gt=0, description="Deadline of a whole streamed chat reply."
    )
    health_checks: dict[str, str] = Field(
        default_factory=dict,
        description="What `/healthz?deep=true` checks, as JSON: name to an http(s) URL, or to "
        "the host:port of a gRPC health service. Empty: the orchestrator and retrieval.",
    )
    web_dir: Path = Field(
        default_factory=lambda: Path(__file__).resolve().parent / "web",
        description="The web chat page: index.html served at /, the rest under /static.",
    )
    tenant: str = Field(
        "",
        description="Tenant of a keyless loopback caller and of keys made without a tenant; "
        "empty is the services' default. A key made for a tenant sees that tenant only.",
    )
    log_level: str = Field("INFO", description="Python logging level.")

    @property
    def keys_required(self) -> bool:
        """Whether every API request must carry a valid key."""
        return self.require_keys or not is_loopback(self.host)

    def deep_checks(self) -> dict[str, str]:
        """The services a deep health check asks."""
        return self.health_checks or {
            "orchestrator": self.orchestrator_addr,
            "retrieval": self.retrieval_addr,
        }

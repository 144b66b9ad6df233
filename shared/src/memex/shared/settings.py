"""Settings shared by every gRPC service; each service subclasses with its own env prefix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    """Where memex keeps its state: $XDG_DATA_HOME/memex, else ~/.local/share/memex."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "memex"


def default_cache_dir() -> Path:
    """Where memex keeps rebuildable files such as exported models: $XDG_CACHE_HOME/memex."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "memex"


def describe_invalid(exc: ValidationError, settings: type[BaseSettings]) -> str:
    """One line per invalid setting of ``settings``, named as the user sets it
    (``invalid MEMEX_GATEWAY_PORT: ...``), without pydantic's input dump and help links."""
    env_prefix = settings.model_config.get("env_prefix") or ""
    lines = []
    for error in exc.errors():
        where = f"{env_prefix}{error['loc'][0]}".upper() if error["loc"] else "settings"
        message = str(error["msg"]).removeprefix("Value error, ")
        lines.append(f"invalid {where}: {message}")
    return "\n".join(lines)


class ServiceSettings(BaseSettings):
    """Network and lifecycle settings every service has (``MEMEX_<STAGE>_...``)."""

    host: str = Field("127.0.0.1", description="Address the gRPC server binds to.")
    port: int = Field(0, ge=0, le=65535, description="gRPC port; 0 picks a free one.")
    metrics_port: int | None = Field(
        None, ge=0, le=65535, description="Prometheus /metrics port; unset serves no metrics."
    )
    grace_seconds: float = Field(
        10.0, gt=0, description="On SIGTERM, how long in-flight calls may take to finish."
    )
    log_level: str = Field("INFO", description="Python logging level.")
    max_message_bytes: int = Field(
        32 * 1024 * 1024, gt=0, description="Largest gRPC message accepted or sent."
    )


MIN_TOKEN_CHARS = 32
"""The shortest shared token accepted: 32 hex characters are 128 random bits."""


class InternalAuthSettings(BaseSettings):
    """How memex's services prove themselves to each other (``MEMEX_INTERNAL_...``), one setting
    for every process of a deployment.

    ``none`` suits one machine, where every service binds to loopback. A deployment across
    machines sets ``token`` (one shared secret in every request's metadata) or ``mtls`` (each
    process presents a certificate that ``memex certs`` signed, and checks its peer's); a request
    without the credential is refused with UNAUTHENTICATED.
    """

    model_config = SettingsConfigDict(env_prefix="MEMEX_INTERNAL_")

    auth: Literal["none", "token", "mtls"] = Field(
        "none", description="none (loopback), token (a shared secret) or mtls (certificates)."
    )
    token: SecretStr | None = Field(
        None, description="The shared secret every service sends and checks, for auth=token."
    )
    tls_dir: Path | None = Field(
        None,
        description="For auth=mtls: a folder with this process's tls.crt and tls.key and the "
        "deployment's ca.crt (a Kubernetes TLS Secret mounts as such a folder; `memex certs` "
        "writes one per service).",
    )

    @model_validator(mode="after")
    def _credential_present(self) -> Self:
        if self.auth == "token":
            secret = self.token.get_secret_value() if self.token else ""
            if len(secret) < MIN_TOKEN_CHARS:
                raise ValueError(
                    f"MEMEX_INTERNAL_AUTH=token needs MEMEX_INTERNAL_TOKEN of at least "
                    f"{MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`), the same in "
                    "every process"
                )
        if self.auth == "mtls":
            if self.tls_dir is None:
                raise ValueError(
                    "MEMEX_INTERNAL_AUTH=mtls needs MEMEX_INTERNAL_TLS_DIR, a folder with tls.crt, "
                    "tls.key and ca.crt (`memex certs --out DIR` makes them)"
                )
            missing = [
                n for n in ("tls.crt", "tls.key", "ca.crt") if not (self.tls_dir / n).is_file()
            ]
            if missing:
                raise ValueError(
                    f"MEMEX_INTERNAL_TLS_DIR {self.tls_dir} lacks {', '.join(missing)} "
                    "(`memex certs --out DIR` makes them)"
                )
        return self

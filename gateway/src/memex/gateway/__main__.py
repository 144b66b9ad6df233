"""Entry point: ``python -m memex.gateway`` (settings from MEMEX_GATEWAY_*)."""

from __future__ import annotations

import logging
import sys

import uvicorn

from memex.gateway.app import StartupError, check_startup, create_app
from memex.gateway.config import GatewaySettings
from memex.shared.logs import configure_logging

log = logging.getLogger("memex.gateway")


def main() -> None:
    """Parses settings once, refuses an unsafe configuration, serves until SIGTERM."""
    settings = GatewaySettings()
    configure_logging(settings.log_level)
    try:
        check_startup(settings)
    except StartupError as exc:
        log.error("not starting: %s", exc)
        print(f"memex gateway: {exc}", file=sys.stderr)
        sys.exit(2)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep memex's logging (with request ids), not uvicorn's own
        access_log=False,  # /metrics counts requests; per-request lines would swamp the log
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()

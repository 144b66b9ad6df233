"""Entry point: ``python -m memex.orchestrator`` (settings from MEMEX_ORCHESTRATOR_*)."""

from __future__ import annotations

import asyncio

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.server import build
from memex.shared.logs import configure_logging


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    settings = OrchestratorSettings()
    configure_logging(settings.log_level)
    asyncio.run(build(settings).run())


if __name__ == "__main__":
    main()

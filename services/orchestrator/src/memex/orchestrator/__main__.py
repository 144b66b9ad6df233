"""Entry point: ``python -m memex.orchestrator`` (settings from MEMEX_ORCHESTRATOR_*)."""

from __future__ import annotations

import asyncio

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.server import build
from memex.shared.logs import configure_logging


async def _serve(settings: OrchestratorSettings) -> None:
    await build(settings).run()


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    settings = OrchestratorSettings()
    configure_logging(settings.log_level)
    asyncio.run(_serve(settings))


if __name__ == "__main__":
    main()

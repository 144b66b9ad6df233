"""Entry point: ``python -m memex.retrieval`` (settings from MEMEX_RETRIEVAL_* variables)."""

from __future__ import annotations

import asyncio

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.server import build
from memex.shared.logs import configure_logging


async def _main(settings: RetrievalSettings) -> None:
    await build(settings).run()


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    settings = RetrievalSettings()
    configure_logging(settings.log_level)
    asyncio.run(_main(settings))


if __name__ == "__main__":
    main()

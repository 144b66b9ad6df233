"""Entry point: ``python -m memex.embedding`` (settings from MEMEX_EMBEDDING_* variables)."""

from __future__ import annotations

import asyncio

from memex.embedding.config import EmbeddingSettings
from memex.embedding.server import build
from memex.shared.logs import configure_logging


async def _main(settings: EmbeddingSettings) -> None:
    await build(settings).run()


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    settings = EmbeddingSettings()
    configure_logging(settings.log_level)
    asyncio.run(_main(settings))


if __name__ == "__main__":
    main()

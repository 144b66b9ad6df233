"""Entry point: ``python -m memex.reasoner`` (settings from MEMEX_REASONER_* variables)."""

from __future__ import annotations

import asyncio
import sys

from pydantic import ValidationError

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.server import build
from memex.shared.logs import configure_logging
from memex.shared.settings import describe_invalid


async def _main(settings: ReasonerSettings) -> None:
    await build(settings).run()


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    try:
        settings = ReasonerSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, ReasonerSettings), file=sys.stderr)
        sys.exit(2)
    configure_logging(settings.log_level)
    asyncio.run(_main(settings))


if __name__ == "__main__":
    main()

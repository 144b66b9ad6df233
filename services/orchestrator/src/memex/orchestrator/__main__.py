"""Entry point: ``python -m memex.orchestrator`` (settings from MEMEX_ORCHESTRATOR_*)."""

from __future__ import annotations

import logging
import sys

from pydantic import ValidationError

from memex.orchestrator.config import OrchestratorSettings
from memex.orchestrator.server import build
from memex.shared.errors import MemexError
from memex.shared.server import serve
from memex.shared.settings import describe_invalid

log = logging.getLogger("memex.orchestrator")


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    settings = load_settings()
    try:
        serve(settings, build)
    except MemexError as exc:  # e.g. its PostgreSQL cannot be reached: one line, no traceback
        log.error("orchestrator cannot run: %s", exc.message)
        raise SystemExit(1) from None


def load_settings() -> OrchestratorSettings:
    """The settings, or exit 2 with one line per invalid one."""
    try:
        return OrchestratorSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, OrchestratorSettings), file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()

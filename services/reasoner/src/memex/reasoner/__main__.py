"""Entry point: ``python -m memex.reasoner`` (settings from MEMEX_REASONER_* variables)."""

from __future__ import annotations

import sys

from pydantic import ValidationError

from memex.reasoner.config import ReasonerSettings
from memex.reasoner.server import build
from memex.shared.server import serve
from memex.shared.settings import describe_invalid


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    try:
        settings = ReasonerSettings()
    except ValidationError as exc:
        print(describe_invalid(exc, ReasonerSettings), file=sys.stderr)
        sys.exit(2)
    serve(settings, build)


if __name__ == "__main__":
    main()

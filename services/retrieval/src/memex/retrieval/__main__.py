"""Entry point: ``python -m memex.retrieval`` (settings from MEMEX_RETRIEVAL_* variables)."""

from __future__ import annotations

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.server import build
from memex.shared.server import serve


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    serve(RetrievalSettings(), build)


if __name__ == "__main__":
    main()

"""Entry point: ``python -m memex.embedding`` (settings from MEMEX_EMBEDDING_* variables)."""

from __future__ import annotations

from memex.embedding.config import EmbeddingSettings
from memex.embedding.server import build
from memex.shared.server import serve


def main() -> None:
    """Parses settings once, configures logging, and serves until SIGTERM."""
    serve(EmbeddingSettings(), build)


if __name__ == "__main__":
    main()

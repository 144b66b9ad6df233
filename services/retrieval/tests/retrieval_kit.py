"""Helpers shared by the retrieval service tests."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(root: Path, rel: str, text: str) -> Path:
    """Writes a dedented file under ``root``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path

"""Where the tests' files are: the checkout, the reference data beside it, and what a test needs
prepared (failed under CI, skipped elsewhere when it is missing)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[5]  # tests/support/src/memex/testing/
SHARED_DATA = REPO_ROOT.parent / "shared"


def require(path: Path, why: str) -> Path:
    """Returns ``path`` if it exists. Otherwise the test fails under CI (where everything must be
    prepared) and is skipped elsewhere, with ``why`` saying how to prepare it."""
    if path.exists():
        return path
    missing(f"{path} is missing: {why}")


def missing(message: str) -> NoReturn:
    """Fails under CI (where everything must be prepared), skips elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def shared_data(relative: str) -> Path:
    """A file of the reference data in ../shared beside the checkout."""
    return require(
        SHARED_DATA / relative, "the reference data ../shared is not beside this checkout"
    )

"""Where memex keeps its data by default, as the tests see it."""

from __future__ import annotations

import os
from pathlib import Path

from memex.shared.settings import default_data_dir


def test_tests_never_use_the_persons_own_data_folder() -> None:
    """The root conftest gives every test run its own XDG_DATA_HOME, so a test that runs the
    CLI or a service with default settings writes into it, not into ~/.local/share/memex."""
    assert default_data_dir() == Path(os.environ["XDG_DATA_HOME"]) / "memex"
    assert "memex-test-data-" in str(default_data_dir())

"""A memex stack of a test's own: its data folder and a free port for every port setting."""

from __future__ import annotations

import os
from pathlib import Path

from memex.shared.stack_settings import StackSettings
from memex.testing import free_ports


def private_stack_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a stack of its own: ``data_dir``, and a free port for every port
    setting of the stack, so tests never collide with each other or with a running memex."""
    names = [name for name in StackSettings.model_fields if name.endswith("_port")]
    ports = {
        f"MEMEX_{name.upper()}": str(port)
        for name, port in zip(names, free_ports(len(names)), strict=True)
    }
    return {**os.environ, **ports, "MEMEX_DATA_DIR": str(data_dir), **extra}

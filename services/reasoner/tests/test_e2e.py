"""End to end: the reasoner as its own process with the default model, and `memex generate`
streaming a reply from it, as on a fresh machine after `make models`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.reasoner.catalogue import TEST_MODEL
from memex.testing import free_port, free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def reasoner_env(model_path: Path) -> Iterator[dict[str, str]]:
    """A reasoner process on a free port; the environment that points `memex` at it."""
    port, metrics_port = free_ports(2)
    env = {
        **os.environ,
        "MEMEX_REASONER_PORT": str(port),
        "MEMEX_REASONER_METRICS_PORT": str(metrics_port),
        "MEMEX_REASONER_CONTEXT_LENGTH": "1024",
        "MEMEX_REASONER_MODEL": TEST_MODEL,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "memex.reasoner"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        wait = subprocess.run(
            [
                sys.executable,
                "-c",
                (
                    "import asyncio, sys; from memex.shared.health import wait_until_serving; "
                    "asyncio.run(wait_until_serving(sys.argv[1], "
                    "'memex.reasoner.v1.ReasonerService', 120))"
                ),
                f"127.0.0.1:{env['MEMEX_REASONER_PORT']}",
            ],
            check=False,
            capture_output=True,
            text=True,
        )
        assert wait.returncode == 0, wait.stderr
        yield env
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr[-2000:]
        assert "Traceback" not in stderr


def memex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_memex_generate_streams_a_reply_from_the_default_model(
    reasoner_env: dict[str, str],
) -> None:
    result = memex(
        reasoner_env,
        "generate",
        "Write one sentence about tea.",
        "--max-tokens",
        "12",
        "--temperature",
        "0",
    )
    assert result.returncode == 0, result.stderr
    assert "tea" in result.stdout.lower()
    assert TEST_MODEL in result.stderr  # the catalogue name, from Info
    assert "tokens/s" in result.stderr


def test_memex_generate_reports_bad_input(reasoner_env: dict[str, str]) -> None:
    result = memex(reasoner_env, "generate", "hi", "--temperature", "9")
    assert result.returncode == 2
    assert "INVALID_ARGUMENT: sampling.temperature is 9" in result.stderr


def test_memex_generate_says_when_the_stack_is_down() -> None:
    env = {**os.environ, "MEMEX_REASONER_PORT": str(free_port())}
    result = memex(env, "generate", "hi", "--timeout", "3")
    assert result.returncode == 3
    assert "memex up" in result.stderr

"""End-to-end fixtures: real service processes on free loopback ports."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from memex.embedding.config import default_model_dir
from memex.reasoner.catalogue import TEST_MODEL, tiny_model_path
from memex.shared import certs
from memex.testing import require
from memex.testing.stack import private_stack_env

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The default embedding model, as `make models` prepares it."""
    return require(default_model_dir() / "model.onnx", "run `make models`").parent


DEMO_VAULT = Path(__file__).resolve().parents[2] / "demo" / "vault"
CLI = [sys.executable, "-m", "memex.cli"]


@dataclass(frozen=True)
class DemoStack:
    """A running private stack with the demo vault indexed: its environment and gateway URL."""

    env: dict[str, str]
    gateway_url: str

    def memex(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """Runs the `memex` CLI against this stack (``env`` added to its environment)."""
        return subprocess.run(
            [*CLI, *args], env={**self.env, **env}, capture_output=True, text=True, timeout=300
        )


@pytest.fixture(scope="session")
def demo_stack(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[DemoStack]:
    """One real stack for the session, the whole demo vault indexed: starting one costs a minute,
    so tests that only read share it (tests that stop, kill or fill a stack start their own).

    Its services call each other over mTLS (MEMEX_INTERNAL_AUTH=mtls, certificates from
    `memex certs`), so every test on it also proves the deployment's transport end to end."""
    require(tiny_model_path(), "run `make models`")
    root = tmp_path_factory.mktemp("demo-stack")
    tls_dir = certs.issue(root / "certs", ["local"]).service_dirs["local"]
    env = private_stack_env(
        root / "data",
        MEMEX_START_TIMEOUT_SECONDS="180",
        MEMEX_REASONER_MODEL=TEST_MODEL,
        MEMEX_INTERNAL_AUTH="mtls",
        MEMEX_INTERNAL_TLS_DIR=str(tls_dir),
    )
    stack = DemoStack(env, f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}")
    try:
        up = stack.memex("up")
        assert up.returncode == 0, up.stdout + up.stderr
        indexed = stack.memex("index", str(DEMO_VAULT), "--json")
        assert indexed.returncode == 0, indexed.stderr
        yield stack
    finally:
        subprocess.run([*CLI, "down"], env=env, timeout=90, check=False)


@pytest.fixture
def stack_env(tmp_path: Path, model_dir: Path) -> dict[str, str]:
    """Environment for a private stack: its own data dir and free ports, and the tiny reasoner
    model whatever the default is (these tests need a model that talks, fast)."""
    return private_stack_env(
        tmp_path / "data", MEMEX_START_TIMEOUT_SECONDS="180", MEMEX_REASONER_MODEL=TEST_MODEL
    )


@pytest.fixture
def memex_cli(stack_env: dict[str, str]) -> Iterator[list[str]]:
    """The `memex` command for the private stack; the stack is stopped after the test."""
    command = [sys.executable, "-m", "memex.cli"]
    yield command
    subprocess.run([*command, "down"], env=stack_env, timeout=90, check=False)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    """A page in Debian's Chromium, headless and with no background networking; a script
    error on the page fails the test."""
    require(CHROMIUM, "run `make browser`")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            tmp_path / "profile",
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1200, "height": 860},
        )
        try:
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page
            assert not errors, errors
        finally:
            context.close()

"""Fixtures of the gateway's tests (the harnesses themselves are in ``support/``: ``harness.py``
for the HTTP gateway, ``cli_harness.py`` for the `memex` commands, ``web_page.py`` for the web
page)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from playwright.sync_api import Page, sync_playwright

from memex.orchestrator.v1 import orchestrator_pb2_grpc
from memex.testing import free_port, require

from .support.cli_harness import Orchestrator, Reads
from .support.harness import Gateway, running_gateway
from .support.web_page import BASE, CHROMIUM, CHROMIUM_FLAGS, Api


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with default settings (loopback, keys optional), shared by a module."""
    with running_gateway(tmp_path_factory.mktemp("gateway"), rate_limit_per_minute=0) as g:
        yield g


# The `memex` commands' fake stack (test_cli_commands.py, test_cli_ask_chat.py);
# test_eval_command.py has a `stack` of its own.
@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[tuple[dict[str, str], Reads, Orchestrator]]:
    # Fakes implement only what the CLI calls; the rest answer UNIMPLEMENTED. Every read goes
    # to the orchestrator: no retrieval service is served here at all.
    orchestrator = Orchestrator()  # type: ignore[abstract]
    retrieval = orchestrator
    server = grpc.aio.server()
    orchestrator_pb2_grpc.add_OrchestratorServiceServicer_to_server(orchestrator, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    env = {
        **os.environ,
        "MEMEX_DATA_DIR": str(tmp_path),
        "MEMEX_RETRIEVAL_PORT": str(free_port()),
        "MEMEX_ORCHESTRATOR_PORT": str(port),
    }
    try:
        yield env, retrieval, orchestrator
    finally:
        await server.stop(None)


# The web page in Chromium (test_web_page*.py).
@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def page(api: Api, tmp_path: Path) -> Iterator[Page]:
    require(CHROMIUM, "run `make browser`")
    with sync_playwright() as p:
        # A persistent context is how Playwright takes a fresh --user-data-dir of our own.
        browser = p.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page()
            page.route(f"{BASE}/**", api.handle)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{BASE}/")
            yield page
            assert not errors, errors
        finally:
            browser.close()

"""The `llm` command line (a third-party OpenAI client, llm.datasette.io) against the gateway in
front of the fake services: configured as OpenAI-compatible models, it lists them, chats, is told
clearly about a model memex does not serve, and `llm -c` continues the same memex conversation.
The same client on the real stack: tests/e2e/test_gateway.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .support.harness import Gateway

pytestmark = pytest.mark.slow  # each `llm` run is a fresh Python process


def llm_env(user_path: Path) -> dict[str, str]:
    """Its own user dir, no plugins, no OpenAI key or base URL of the machine's, no proxy."""
    dropped = ("OPENAI_", "LLM_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(dropped)}
    return {**env, "LLM_USER_PATH": str(user_path), "LLM_LOAD_PLUGINS": "", "NO_PROXY": "*"}


def test_llm_chats_and_continues_through_the_gateway(gateway: Gateway, tmp_path: Path) -> None:
    entries = [
        {"model_id": name.replace("/", "-"), "model_name": name, "api_base": f"{gateway.url}/v1"}
        for name in ("memex", "memex/historian", "memex/poet")
    ]
    (tmp_path / "extra-openai-models.yaml").write_text(yaml.safe_dump(entries))
    env = llm_env(tmp_path)

    def llm(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "llm", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    listed = llm("models")
    assert "OpenAI Chat: memex-historian" in listed.stdout, listed.stderr

    refused = llm("-m", "memex-poet", "Hello?")
    assert refused.returncode == 1
    assert "404 - model 'memex/poet' does not exist; memex serves memex, " in refused.stderr
    assert "Traceback" not in refused.stderr

    first = llm("-m", "memex-historian", "Who returned the deposit?")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "Graham returned £1,030 of the deposit."
    started = gateway.orchestrator.chat_requests[-1]
    assert (started.persona, started.conversation_id) == ("historian", "")

    followed = llm("-c", "How much?")
    assert followed.returncode == 0, followed.stderr
    sent = gateway.orchestrator.chat_requests[-1]
    assert (sent.message, sent.persona) == ("How much?", "historian")
    assert sent.conversation_id in gateway.orchestrator.conversations
    assert gateway.orchestrator.conversations[sent.conversation_id].title.startswith("Who returned")

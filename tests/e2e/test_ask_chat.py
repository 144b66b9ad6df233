"""The whole stack as a person uses it: index a vault, ask, chat, list and forget, through the CLI,
with the real embedding model and the real default llama.cpp model."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memex.reasoner.catalogue import tiny_model_path
from memex.testing import require

# A whole stack up, index, ask, chat, forget and down: with bge-small-en-v1.5 (12 layers) as the
# embedder it took about 120 s on a 2-core machine loaded to 7-10 (MiniLM: 99 s), at the edge
# of the default timeout; the other e2e modules allow 900 s.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]

NOTES = {
    "Flat lease.md": "---\ntitle: Flat lease\ndate: 2026-02-01\n---\n# Deposit\nGraham agreed to "
    "return £1,030 of the £1,150 deposit; £120 went on carpet cleaning.\n",
    "Allotment.md": "---\ntitle: Allotment\ndate: 2026-03-01\n---\nPlot 23B costs £48 a year.\n",
    "Therapy.md": "---\ntitle: Therapy\nsensitive: true\n---\nTalked about the panic attacks.\n",
}


def run(
    command: list[str], env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_index_ask_chat_and_forget_on_the_real_stack(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    require(tiny_model_path(), "run `make models`")
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text)
    up = run(memex_cli, stack_env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    indexed = run(memex_cli, stack_env, "index", str(vault), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["added"] == 3

    asked = run(memex_cli, stack_env, "ask", "How much of the deposit did Graham return?", "--json")
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["persona"] == "analyst"
    assert result["stages"][:3] == ["retrieve", "synthesize", "ground_check"]  # no plan hop
    assert result["answer"]
    # Whatever the small model says, every citation that survives names a note it was shown.
    assert {c["ref"] for c in result.get("citations", [])} <= {
        "[[Flat lease]]",
        "[[Allotment]]",
        "[[Therapy]]",
    }
    state = Path(stack_env["MEMEX_DATA_DIR"]) / "orchestrator" / "state.db"
    with sqlite3.connect(state) as db:
        purposes = [row[0] for row in db.execute("SELECT purpose FROM llm_log ORDER BY created_at")]
        assert purposes == ["ask_synthesize"]  # one model call, audited
        assert (
            db.execute("SELECT COUNT(*) FROM telemetry_turns WHERE kind = 'ask'").fetchone()[0] == 1
        )
        assert db.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 0

    chatted = run(memex_cli, stack_env, "chat", "What does the allotment cost?")
    assert chatted.returncode == 0, chatted.stderr
    assert "@@CITATIONS" not in chatted.stdout and "<think>" not in chatted.stdout
    listed = json.loads(run(memex_cli, stack_env, "conversations", "--json").stdout)
    [conversation] = listed["conversations"]
    assert conversation["title"] == "What does the allotment cost?"
    assert conversation["message_count"] == 2

    forgot = run(memex_cli, stack_env, "forget", conversation["id"])
    assert forgot.returncode == 0
    assert not json.loads(run(memex_cli, stack_env, "conversations", "--json").stdout).get(
        "conversations"
    )
    missing = run(memex_cli, stack_env, "forget", conversation["id"])
    assert missing.returncode == 4 and "NOT_FOUND" in missing.stderr

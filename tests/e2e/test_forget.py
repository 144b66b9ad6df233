"""Forget on the whole stack, in a private stack of its own (forgetting in a shared one would
change other tests' memory): index a vault, ask so the note reaches telemetry and the LLM log,
forget the note through the CLI, then look for it in every store by hand; and forget a thread
queued over HTTP."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import httpx
import pytest

from memex.reasoner.catalogue import tiny_model_path
from memex.retrieval.weaviate_server import WeaviatePorts, find_binary
from memex.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]
# Each store in a private stack of its own: forgetting in a shared one would change other tests.

SECRET = "Zanzibar marmalade: quince, cardamom and smoked paprika, simmered overnight"
NOTES = {
    "kitchen/Quince Marmalade.md": f"---\ntitle: Quince Marmalade\ndate: 2026-02-01\n---\n"
    f"# Recipe\n{SECRET}. Seven jars went to the cellar shelf.\n",
    "Allotment.md": "---\ntitle: Allotment\ndate: 2026-03-01\n---\nPlot 23B costs £48 a year.\n",
}


def run(
    command: list[str], env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *args], env=env, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def paths_found(command: list[str], env: dict[str, str], query: str) -> set[str]:
    found = run(command, env, "search", query, "--include-sensitive", "-k", "50", "--json")
    assert found.returncode == 0, found.stderr
    return {i["provenance"].get("path", "") for i in json.loads(found.stdout).get("items", [])}


@pytest.mark.parametrize("store", ["embedded", "weaviate"])
def test_forget_a_note_and_a_thread_on_the_real_stack(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path, store: str
) -> None:
    require(tiny_model_path(), "run `make models`")
    if store == "weaviate":
        find_binary()  # no binary is an error naming `make weaviate`, not a skip
        ports = WeaviatePorts.free()  # cluster ports too: other stacks may run a Weaviate
        for name in ("http", "grpc", "gossip", "data", "raft", "raft_rpc"):
            stack_env[f"MEMEX_WEAVIATE_{name.upper()}_PORT"] = str(getattr(ports, name))
    vault = tmp_path / "vault"
    for name, text in NOTES.items():
        (vault / name).parent.mkdir(parents=True, exist_ok=True)
        (vault / name).write_text(text)
    up = run(memex_cli, stack_env, "up", "--store", store)
    assert up.returncode == 0, up.stdout + up.stderr
    assert run(memex_cli, stack_env, "index", str(vault)).returncode == 0
    asked = run(memex_cli, stack_env, "ask", "What goes in the quince marmalade?", "--json")
    assert asked.returncode == 0, asked.stderr
    state = Path(stack_env["MEMEX_DATA_DIR"]) / "orchestrator" / "state.db"
    with sqlite3.connect(state) as db:  # the note reached the model's prompt and the telemetry
        assert db.execute("SELECT COUNT(*) FROM llm_log WHERE prompt LIKE '%Zanzibar%'").fetchone()[
            0
        ]
        assert db.execute("SELECT COUNT(*) FROM telemetry_retrievals").fetchone()[0]
    assert "kitchen/Quince Marmalade.md" in paths_found(memex_cli, stack_env, SECRET)

    forgot = run(memex_cli, stack_env, "forget", "note", "Quince Marmalade", "--yes")
    assert forgot.returncode == 0, forgot.stdout + forgot.stderr
    out = forgot.stdout
    assert "Forgot the note [[Quince Marmalade]] (kitchen/Quince Marmalade.md" in out
    assert "0 remaining in every store." in out
    for name in (f"retrieval ({store})", "telemetry", "llm_log"):
        assert name in out
    assert ("files were scrubbed" in out) == (store == "embedded")
    assert "still in your vault" in out and "tombstone" in out

    # Look for it by hand, in every store: the database first, as a search for the note's words
    # is itself logged in telemetry (a new question, asked after the forget).
    with sqlite3.connect(state) as db:
        for table, column in [("llm_log", "prompt"), ("llm_log", "response"),
                              ("telemetry_turns", "answer"), ("telemetry_turns", "query")]:  # fmt: skip
            hits = db.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {column} LIKE '%Zanzibar%' "
                f"OR {column} LIKE '%Quince Marmalade]]%'"
            ).fetchone()[0]
            assert hits == 0, (table, column)
        assert db.execute("SELECT COUNT(*) FROM llm_log").fetchone()[0]  # calls stay, text gone
    assert "kitchen/Quince Marmalade.md" not in paths_found(memex_cli, stack_env, SECRET)
    reindexed = run(memex_cli, stack_env, "index", str(vault), "--json")
    assert reindexed.returncode == 0, reindexed.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(reindexed.stdout)["skipped"]}
    assert "forgotten" in skipped["kitchen/Quince Marmalade.md"]
    assert "kitchen/Quince Marmalade.md" not in paths_found(memex_cli, stack_env, SECRET)
    again = run(memex_cli, stack_env, "forget", "note", "Quince Marmalade", "--yes")
    assert again.returncode == 4 and "NOT_FOUND" in again.stderr

    gateway = f"http://127.0.0.1:{stack_env['MEMEX_GATEWAY_PORT']}"
    queued = httpx.post(f"{gateway}/v1/turns", json={"text": "Where are the jars?"}, timeout=30)
    assert queued.status_code == 202, queued.text
    thread = queued.json()["turn"]["thread_id"]
    dropped = run(memex_cli, stack_env, "forget", "thread", thread, "--yes")
    assert dropped.returncode == 0, dropped.stderr
    assert "0 remaining in every store." in dropped.stdout
    with sqlite3.connect(state) as db:
        assert (
            db.execute("SELECT COUNT(*) FROM turns WHERE thread_id = ?", (thread,)).fetchone()[0]
            == 0
        )
    gone = httpx.get(f"{gateway}/v1/threads/{thread}/turns", timeout=30)
    assert gone.status_code == 404

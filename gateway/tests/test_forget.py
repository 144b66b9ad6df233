"""Forget on the surfaces, against the fake orchestrator over real gRPC: `memex forget` (receipt
text, --json, --yes, exit codes) and DELETE /v1/notes/{note} and /v1/threads/{id}."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .support.harness import Gateway, running_gateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    """A fresh gateway and fakes per test: a forget changes the fakes' state."""
    with running_gateway(tmp_path, rate_limit_per_minute=0) as g:
        yield g


def memex(gateway: Gateway, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, stdin not a terminal, talking to the fake orchestrator."""
    port = gateway.settings.orchestrator_addr.rsplit(":", 1)[1]
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), "MEMEX_ORCHESTRATOR_PORT": port}
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", "forget", *args],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def on_terminal(gateway: Gateway, tmp_path: Path, typed: bytes, *args: str) -> tuple[int, str]:
    """The CLI with a terminal for stdin, stdout and stderr, ``typed`` typed ahead."""
    port = gateway.settings.orchestrator_addr.rsplit(":", 1)[1]
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), "MEMEX_ORCHESTRATOR_PORT": port}
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "memex.cli", "forget", *args],
        env=env, stdin=slave, stdout=slave, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    os.write(master, typed)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def test_on_a_terminal_forget_asks_first(gateway: Gateway, tmp_path: Path) -> None:
    code, screen = on_terminal(gateway, tmp_path, b"n\n", "note", "Flat lease")
    assert code == 0 and "Forget the note [[Flat lease]] (home/Flat lease.md)?" in screen
    assert "nothing forgotten" in screen and not gateway.orchestrator.forgotten
    code, screen = on_terminal(gateway, tmp_path, b"y\n", "note", "Flat lease")
    assert code == 0 and "0 remaining in every store." in screen
    assert gateway.orchestrator.forgotten


def test_forget_note_prints_the_receipt(gateway: Gateway, tmp_path: Path) -> None:
    result = memex(gateway, tmp_path, "note", "Flat lease", "--yes")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Forgot the note [[Flat lease]] (home/Flat lease.md, episode ep-1)." in out
    assert "retrieval (fake)" in out and "telemetry" in out
    lines = [line.split() for line in out.splitlines()]
    assert ["retrieval", "(fake)", "chunks", "2", "0"] in lines
    assert "lookup by episode id" in out and "1 -> 0" in out
    assert "0 remaining in every store." in out
    assert "still in your vault" in out and "tombstone" in out
    assert "`memex forget conversation conv-9`" in out
    assert gateway.orchestrator.forgotten
    again = memex(gateway, tmp_path, "note", "Flat lease", "--yes")
    assert again.returncode == 4 and "NOT_FOUND" in again.stderr


def test_forget_note_that_leaves_something_fails_and_says_where(
    gateway: Gateway, tmp_path: Path
) -> None:
    result = memex(gateway, tmp_path, "note", "leaky", "--yes")
    assert result.returncode == 1
    assert "NOT COMPLETE" in result.stderr and "retrieval (fake): chunks (1)" in result.stderr
    as_json = memex(gateway, tmp_path, "note", "leaky", "--yes", "--json")
    assert as_json.returncode == 1
    receipt = json.loads(as_json.stdout)
    assert receipt["complete"] is False and receipt["counts"][0]["remaining"] == 1


def test_forget_asks_first_and_a_script_must_say_yes(gateway: Gateway, tmp_path: Path) -> None:
    refused = memex(gateway, tmp_path, "note", "Flat lease")
    assert refused.returncode == 2 and "without --yes" in refused.stderr
    assert not gateway.orchestrator.forgotten
    preview = memex(gateway, tmp_path, "note", "home/Flat lease.md", "--dry-run")
    assert preview.returncode == 0 and "Would forget [[Flat lease]]" in preview.stdout
    assert not gateway.orchestrator.forgotten
    for args, code, words in [
        (["note", "nothing here", "--yes"], 4, "NOT_FOUND"),
        (["note", " ", "--yes"], 2, "name the note"),
        (["widget", "x"], 2, "say conversation, thread or note"),
        (["note"], 2, "name the note to forget: its vault path or title"),
        (["thread", "no-such-thread", "--yes"], 4, "NOT_FOUND"),
        (["no-such-conversation"], 4, "NOT_FOUND"),  # the older `memex forget ID` form
    ]:
        result = memex(gateway, tmp_path, *args)
        assert (result.returncode, words in result.stderr) == (code, True), result.stderr


def test_forget_thread_over_cli_and_http(gateway: Gateway, tmp_path: Path) -> None:
    def queue(text: str, thread_id: str = "") -> str:
        reply = httpx.post(
            f"{gateway.url}/v1/turns", json={"text": text, "thread_id": thread_id}, timeout=30
        )
        assert reply.status_code == 202
        return str(reply.json()["turn"]["thread_id"])

    thread = queue("where is the spare key?")
    queue("and the boiler?", thread)
    result = memex(gateway, tmp_path, "thread", thread, "--yes")
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert ["orchestrator", "turns", "(questions", "and", "answers)", "2", "0"] in lines
    assert "0 remaining in every store." in result.stdout

    other = queue("a second thread")
    deleted = httpx.delete(f"{gateway.url}/v1/threads/{other}", timeout=30)
    assert deleted.status_code == 200
    assert deleted.json() == {"thread_id": other, "turns_deleted": 1, "turns_remaining": 0}
    gone = httpx.delete(f"{gateway.url}/v1/threads/{other}", timeout=30)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"


def test_delete_note_over_http_returns_the_receipt(gateway: Gateway) -> None:
    preview = httpx.delete(f"{gateway.url}/v1/notes/ep-1", params={"dry_run": True}, timeout=30)
    assert preview.status_code == 200
    assert preview.json()["dry_run"] is True and preview.json()["complete"] is False
    response = httpx.delete(f"{gateway.url}/v1/notes/home/Flat lease.md", timeout=30)
    assert response.status_code == 200
    receipt = response.json()
    assert (receipt["episode_id"], receipt["complete"], receipt["tombstoned"]) == (
        "ep-1",
        True,
        True,
    )
    assert all(c["remaining"] == 0 for c in receipt["counts"])
    assert [c["found_after"] for c in receipt["checks"]] == [0]
    gone = httpx.delete(f"{gateway.url}/v1/notes/ep-1", timeout=30)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "NOT_FOUND"
    # Any name reaches the route, a newline too (found by schemathesis: it was a 405).
    odd = httpx.delete(f"{gateway.url}/v1/notes/a%0Ab", timeout=30)
    assert odd.status_code == 404 and odd.json()["error"]["code"] == "NOT_FOUND"
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    assert {"200", "400", "404"} <= set(spec["paths"]["/v1/notes/{note}"]["delete"]["responses"])
    assert "delete" in spec["paths"]["/v1/threads/{thread_id}"]

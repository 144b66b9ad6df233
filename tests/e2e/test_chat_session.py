"""An interactive `memex chat` session on the real stack, driven through stdin: replies stream,
citations carry their support labels, /new starts a second conversation."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from memex.reasoner.catalogue import tiny_model_path
from memex.testing import require

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
NOTES = {
    "Allotment.md": "---\ntitle: Allotment\ndate: 2026-03-01\n---\nPlot 23B costs £48 a year.\n",
    "Flat lease.md": "---\ntitle: Flat lease\ndate: 2026-02-01\n---\nGraham returned £1,030 of "
    "the £1,150 deposit.\n",
}
LABEL = re.compile(r"^  \[\d+\] (\[\[.+\]\]|\S+:\S+) \((verbatim|paraphrase|reading between the "
                   r"lines|unchecked)\)", re.M)  # fmt: skip


def test_an_interactive_chat_session(
    memex_cli: list[str], stack_env: dict[str, str], tmp_path: Path
) -> None:
    require(tiny_model_path(), "run `make models`")
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in NOTES.items():
        (vault / name).write_text(text)

    def memex(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*memex_cli, *args], env=stack_env, input=stdin, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip

    assert memex("up").returncode == 0
    assert memex("index", str(vault)).returncode == 0
    session = memex(
        "chat",
        stdin="What does the allotment cost?\n"
        "And is that per year?\n"
        "/new\n"
        "How much of the deposit came back?\n"
        "/exit\n"
        "this line is never sent\n",
    )
    assert session.returncode == 0, session.stderr
    assert "[error" not in session.stderr
    assert "@@CITATIONS" not in session.stdout and "<think>" not in session.stdout
    # Every source line names a note or record with one of the three labels (or unchecked).
    sources = [line for line in session.stdout.splitlines() if line.startswith("  [")]
    assert len(LABEL.findall(session.stdout)) == len(sources)

    listed = json.loads(memex("conversations", "--json").stdout)["conversations"]
    counts = sorted((c["title"], c["message_count"]) for c in listed)
    assert counts == [
        ("How much of the deposit came back?", 2),
        ("What does the allotment cost?", 4),
    ]
    replayed = json.loads(memex("conversations", listed[0]["id"], "--json").stdout)
    assert replayed["messages"][0]["text"] in (
        "What does the allotment cost?",
        "How much of the deposit came back?",
    )
    # The streamed replies are the stored ones.
    for message in replayed["messages"]:
        if message["role"] == "MESSAGE_ROLE_ASSISTANT":
            assert message["text"].strip()[:40] in session.stdout

"""`memex index` and `memex search --explain` against a running retrieval service."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from memex.retrieval.config import RetrievalSettings
from memex.retrieval.server import build
from memex.testing import serving


async def _memex(port: int, *args: str) -> tuple[int, str, str]:
    # Port 1 never answers: a search (through the orchestrator) finds no stack, even where a
    # person's own memex is running on the default ports.
    env = {
        **os.environ,
        "MEMEX_RETRIEVAL_PORT": str(port),
        "MEMEX_ORCHESTRATOR_PORT": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "memex.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return int(proc.returncode or 0), out.decode(), err.decode()


# Searches go through the orchestrator: tests/e2e/test_read_policy.py runs them on a real stack.
@pytest.mark.slow
async def test_index_and_its_errors(
    retrieval_settings: RetrievalSettings, vault: Path, tmp_path: Path
) -> None:
    async with serving(build(retrieval_settings)) as running:
        code, out, _ = await _memex(running.port, "index", str(vault), "--json")
        assert code == 0
        summary = json.loads(out)
        assert summary["added"] == 6
        assert {"path": "bin.md", "reason": "binary file"} in summary["skipped"]

        code, out, _ = await _memex(running.port, "index", str(vault))
        assert code == 0
        assert "0 added, 0 updated, 0 removed, 6 unchanged" in out

        code, _, err = await _memex(running.port, "index", str(tmp_path / "nope"))
        assert code == 2
        assert "does not exist" in err

        other = tmp_path / "other-vault"
        other.mkdir()
        (other / "Kiln.md").write_text("The kiln fires at 1,240 C.\n")
        code, out, _ = await _memex(running.port, "index", str(other))
        assert code == 0
        assert "1 added, 0 updated, 6 removed" in out
        assert f"warning: this memory held the vault {vault}; its 6 notes" in out


async def test_search_without_a_service_says_how_to_start_it(tmp_path: Path) -> None:
    code, _, err = await _memex(12345, "search", "anything")
    assert code == 3
    assert "memex up" in err

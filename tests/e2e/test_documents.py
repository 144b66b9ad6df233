"""A vault of what a person keeps (issue 36): a note, a spoken voice memo, a PDF with a scanned
page, a saved web page, a mail and a mailbox, with files that cannot be read beside them.
`memex index` reads them all (the memo transcribed by the default Whisper model) and says why it
skipped the rest; `memex ask` on the real stack with the default reasoner answers a question
about each kind, cited to the memo's time, the PDF's page, the clipping and the message."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Page, expect

from memex.cli.stack.services import private_stack_env
from memex.reasoner.catalogue import DEFAULT_MODEL, lookup
from memex.retrieval.testing import (
    ESPEAK,
    MEMO_PADLOCK,
    MEMO_RAMBLE,
    speak,
    to_m4a,
    write_documents_vault,
)
from memex.retrieval.whisper_models import CATALOGUE, DEFAULT_WHISPER_MODEL
from memex.shared.testing import REPO_ROOT, require

from .test_web_chat import memex

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

COMMAND = [str(Path(REPO_ROOT, ".venv", "bin", "memex"))]


@pytest.fixture(scope="module")
def documents_stack(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, str], str]]:
    """A private stack on the default model over the indexed documents vault; (env, the index
    command's JSON report)."""
    require(lookup(DEFAULT_MODEL).path(), "run `make models`")
    require(CATALOGUE[DEFAULT_WHISPER_MODEL].path() / "model.bin", "run `make models`")
    require(ESPEAK, "run `make espeak`")
    root = tmp_path_factory.mktemp("documents")
    vault = write_documents_vault(root / "vault")
    (vault / "memos").mkdir()
    wav = speak(root / "memo.wav", MEMO_RAMBLE, MEMO_PADLOCK)
    to_m4a(wav, vault / "memos" / "2026-03-14 walk memo.m4a")
    env = private_stack_env(root / "data", MEMEX_START_TIMEOUT_SECONDS="240")
    env.pop("MEMEX_REASONER_MODEL", None)
    env.pop("MEMEX_REASONER_MODEL_PATH", None)
    try:
        memex(COMMAND, env, "up")
        yield env, memex(COMMAND, env, "index", str(vault), "--json")
    finally:
        subprocess.run([*COMMAND, "down"], env=env, timeout=90, check=False)


def test_index_reads_every_kind_and_says_why_it_skipped_the_rest(
    documents_stack: tuple[dict[str, str], str],
) -> None:
    env, report = documents_stack
    summary = json.loads(report)
    assert int(summary["added"]) == 6, summary
    skipped = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert set(skipped) == {"Scan.pdf", "Locked.pdf", "Broken.pdf", "empty.html"}, skipped
    assert "password" in skipped["Locked.pdf"]
    # `memex status` keeps saying what was skipped and why after the report has scrolled away.
    status = json.loads(memex(COMMAND, env, "status", "--json"))
    kept = {s["path"]: s["reason"] for s in status["last_index"][""]["skipped"]}
    assert kept == skipped
    assert f"  skipped Locked.pdf: {skipped['Locked.pdf']}" in memex(COMMAND, env, "status")


@pytest.mark.parametrize(
    ("question", "fact", "ref"),
    [
        (
            "How much does the new padlock for the allotment shed cost?",
            r"12",
            # The padlock comes after the ramble: a time past the memo's start.
            r"\[\[2026-03-14 walk memo\]\] 00:(?!00)\d\d",
        ),
        (
            "Which scheme protects my tenancy deposit?",
            r"Deposit Protection Service",
            re.escape("[[Lease.pdf]] p. 3"),
        ),
        ("How much sugar goes into my kombucha?", r"200 ?g", re.escape("[[Kombucha at home]]")),
        (
            "How much is Ron asking for the half-plot rent in 2027?",
            r"55",
            re.escape("[[Allotment.mbox]] (Plot rent — Ron Hale, 2026-11-08)"),
        ),
        ("What did Gord quote for screening the porch?", r"\$4,200", re.escape("[[Porch quote]]")),
    ],
)
def test_a_question_about_each_kind_is_answered_from_it_and_cited_to_the_place(
    documents_stack: tuple[dict[str, str], str], question: str, fact: str, ref: str
) -> None:
    env, _ = documents_stack
    result = json.loads(memex(COMMAND, env, "ask", question, "--json"))
    assert not result.get("abstained"), result
    assert re.search(fact, result["answer"]), result["answer"]
    assert any(re.fullmatch(ref, c["ref"]) for c in result["citations"]), result
    assert re.search(ref, result["answer"]), result["answer"]


def test_a_cited_memo_plays_from_its_time_and_a_pdf_opens_at_its_page(
    documents_stack: tuple[dict[str, str], str], page: Page
) -> None:
    env, _ = documents_stack
    gateway = f"http://127.0.0.1:{env['MEMEX_GATEWAY_PORT']}"
    vault = Path(env["MEMEX_DATA_DIR"]).parent / "vault"

    def hit(query: str, path: str) -> dict[str, Any]:
        found = httpx.post(f"{gateway}/v1/search", json={"query": query}, timeout=60).json()
        return next(h for h in found["items"] if h["provenance"]["path"] == path)

    memo = hit("new padlock for the allotment shed", "memos/2026-03-14 walk memo.m4a")
    episode, heading = memo["provenance"]["episode_id"], memo["provenance"]["heading"]
    assert re.fullmatch(r"00:\d\d", heading), heading
    served = httpx.get(f"{gateway}/v1/notes/{quote(episode)}/file", timeout=60)
    assert served.status_code == 200 and served.headers["content-type"] == "audio/mp4"
    assert served.content == (vault / "memos" / "2026-03-14 walk memo.m4a").read_bytes()
    moving = hit("removal van booked", "Moving.md")["provenance"]["episode_id"]
    refused = httpx.get(f"{gateway}/v1/notes/{quote(moving)}/file", timeout=60)
    assert refused.status_code == 400 and "not a voice memo" in refused.text

    # The note view in Chromium: the memo's player, cued to the cited stretch.
    page.goto(f"{gateway}/notes/{quote(episode)}?chunk={quote(memo['id'])}")
    player = page.locator("figure.original audio")
    expect(page.locator("figure.original figcaption")).to_have_text(
        f"The voice memo, from {heading}"
    )
    if player.evaluate("a => a.canPlayType('audio/mp4')"):  # Debian's Chromium plays AAC
        page.wait_for_function(
            "() => document.querySelector('figure.original audio').readyState >= 1", timeout=30_000
        )
        minutes, seconds = heading.split(":")
        assert player.evaluate("a => a.currentTime") == int(minutes) * 60 + int(seconds)
        assert player.evaluate("a => a.duration") > 0
    assert player.evaluate("a => a.src").startswith("blob:")

    lease = hit("which scheme protects my tenancy deposit", "Lease.pdf")
    page.goto(
        f"{gateway}/notes/{quote(lease['provenance']['episode_id'])}?chunk={quote(lease['id'])}"
    )
    link = page.locator("p.original a")
    page_number = lease["provenance"]["heading"].removeprefix("p. ")
    expect(link).to_have_text(f"Open the PDF at page {page_number}")
    assert (link.get_attribute("href") or "").endswith(f"#page={page_number}")

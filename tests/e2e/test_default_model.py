"""The answer a newcomer gets (issue 10): the default catalogue model, on CPU, over the demo vault,
answers right and cites the note it comes from, in the CLI and in the web chat in a real Chromium.

Every part is real: the gateway, orchestrator, retrieval, embedding and llama.cpp with the
default model (Qwen2.5-Coder-1.5B-Instruct). The questions are the two a newcomer meets first:
`make demo`'s own, and the allotment's cost asked in the web chat. Sampling runs at a low
temperature, so the facts are stable; the words around them are not asserted.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from memex.reasoner.catalogue import DEFAULT_MODEL, lookup
from memex.testing import REPO_ROOT, require
from memex.testing.stack import private_stack_env

from .test_web_chat import ask, memex

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

DEMO_QUESTION = "How much of my deposit did Graham agree to give back, and why?"
ANSWER_SECONDS = 240


@pytest.fixture(scope="module")
def default_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One private stack on the default model over the indexed demo vault, for this module."""
    require(lookup(DEFAULT_MODEL).path(), "run `make models`")
    env = private_stack_env(
        tmp_path_factory.mktemp("default") / "data", MEMEX_START_TIMEOUT_SECONDS="240"
    )
    env.pop("MEMEX_REASONER_MODEL", None)
    env.pop("MEMEX_REASONER_MODEL_PATH", None)
    command = [str(Path(REPO_ROOT, ".venv", "bin", "memex"))]
    try:
        memex(command, env, "up")
        memex(command, env, "index", str(REPO_ROOT / "demo" / "vault"))
        yield env
    finally:
        subprocess.run([*command, "down"], env=env, timeout=90, check=False)


def test_the_demo_question_gets_a_right_answer_citing_its_note(
    default_stack: dict[str, str],
) -> None:
    command = [str(Path(REPO_ROOT, ".venv", "bin", "memex"))]
    result = json.loads(memex(command, default_stack, "ask", DEMO_QUESTION, "--json"))
    assert not result.get("abstained"), result
    assert re.search(r"£1,?030", result["answer"]), result["answer"]
    refs = {c["ref"] for c in result["citations"]}
    assert refs & {"[[Flat Deposit Agreement]]", "[[2026-04-28 — Deposit sorted]]"}, result
    # The why, cited too (issue 35): the worktop charge was dropped because its mark is on the
    # check-in inventory. The £120 carpet deduction stands beside the amount in any answer; the
    # "why" was once read into the check-out ("because he noticed a scuff ... 'that's fine'").
    # The sentence that gives it must cite a note memex checked. The quote shown for that note may
    # be another of its sentences (a CI run on a busy machine cited the amount's sentence only),
    # so the reason is looked for in the cited sentence of the answer, not in the quote.
    why = re.search(r"(?i)(?:inventory|worktop)[^\[]*(\[\[[^\]]+\]\])", result["answer"])
    assert why and why.group(1) in refs, result["answer"]
    assert "scuff" not in result["answer"], result["answer"]
    assert result["model"] == DEFAULT_MODEL
    assert result["stages"][:1] == ["retrieve"]  # one model call: no plan hop for this question
    # Piped, the CLI prints the checked answer with its [[citation]] in the text.
    printed = memex(command, default_stack, "ask", DEMO_QUESTION)
    assert "£1,030" in printed and "[[" in printed


def test_the_web_chat_says_what_the_allotment_costs_with_its_source(
    default_stack: dict[str, str], page: Page
) -> None:
    """Queued, the web chat's turn is answered by ask (greedy; its best sources first, the whole
    briefing when they do not hold the answer); streamed chat reads fewer sources to speak
    within seconds and is less reliable."""
    page.goto(f"http://127.0.0.1:{default_stack['MEMEX_GATEWAY_PORT']}")
    page.get_by_role("radio", name="Queue").check()
    ask(page, "What does the allotment cost?")
    question = page.locator(".message.user").last
    expect(question).to_have_attribute("data-state", "answered", timeout=ANSWER_SECONDS * 1000)
    answer = page.locator(".message.assistant").last
    expect(answer.locator(".text")).to_contain_text("£48")
    sources = answer.locator(".citation a.ref").all_inner_texts()
    assert {"[[Allotment Tenancy Agreement]]", "[[Allotment Plot 23B]]"} & set(sources), sources


def test_a_question_naming_a_day_is_answered_from_the_note_of_that_day(
    default_stack: dict[str, str], tmp_path: Path
) -> None:
    """Nothing in the question matches the daily note's words: its date does (the dated
    search). Scored by `memex eval` with the gold named by its file, whose note has another
    title ("Allotment open day: bring jam"): the citation's path matches it."""
    questions = tmp_path / "dated.jsonl"
    line = {
        "id": "open-day",
        "question": "What did I do on 19 July 2025?",
        "gold": ["journal/2025-07-19 — Allotment open day.md"],
        "facts": ["jam"],
        "answerable": True,
    }
    questions.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    command = [str(Path(REPO_ROOT, ".venv", "bin", "memex"))]
    report = json.loads(memex(command, default_stack, "eval", str(questions), "--json"))
    [row] = report["rows"]
    assert row["gold_at"] is not None and row["gold_at"] <= 3, row  # retrieval's share
    assert "journal/2025-07-19 — Allotment open day.md" in row["cited_paths"], row
    assert row["ok"], row

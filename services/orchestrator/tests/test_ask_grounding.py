"""Ask's citations (SPEC B2, B10; issues 10, 35): the model cites sources by number, and memex
grounds each number, quotes and grades the chunk that holds the claim, moves a fact to the
source that holds it, and cuts a sentence whose figure no cited source holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memex.orchestrator.answer.briefing import CITE_REMINDER, today_line
from memex.orchestrator.memory.items import ShownItem

from .fakes import NOTES, FakeMemory, make_orchestrator, reasoner


async def test_a_default_ask_is_one_audited_model_call_citing_sources_by_number(
    tmp_path: Path,
) -> None:
    model = reasoner()
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)

    assert len(model.calls) == 1
    [row] = o.store.query("SELECT purpose FROM llm_log")
    assert row["purpose"] == "ask_synthesize"
    assert result.stages == ["retrieve", "synthesize", "ground_check"]
    prompt = model.calls[0].messages[-1].content
    assert prompt.startswith("Sources:\n\n[1] Flat lease (1 February 2026)\nAgreed with Dana")
    assert "[4] Record: Dana Ruiz" in prompt and prompt.endswith(
        f"\n\n{today_line()}\nQuestion: What did we agree about the deposit?\n{CITE_REMINDER}"
    )
    assert model.calls[0].options.json_schema == ""  # prose, not JSON
    assert [c.ref for c in result.citations] == ["[[Flat lease]]", "entities:dana"]
    assert (
        result.citations[0].quote == "Agreed with Dana that the deposit is £800, returned in May."
    )
    assert result.citations[0].support == "verbatim"  # every word of the claim is there
    assert result.grounding.dropped == ("[9]",)
    assert not result.abstained
    assert result.answer == (
        "The deposit is £800 [[Flat lease]], returned in May [[Flat lease]]. "
        "Dana is the landlord entities:dana."
    )


@pytest.mark.parametrize(
    ("reply", "stage"),
    [
        ("The boiler was fixed after three visits [1].", "reanchor"),  # the wrong number
        ("The boiler was fixed after three visits.", "attribute"),  # no number at all
    ],
)
async def test_a_fact_one_source_holds_is_cited_to_it_whatever_number_the_model_wrote(
    tmp_path: Path, reply: str, stage: str
) -> None:
    model = reasoner([reply])
    result = await make_orchestrator(tmp_path, model, FakeMemory(NOTES)).asker.ask("me", "boiler?")
    assert not result.abstained and stage in result.stages
    [citation] = result.citations
    assert (citation.ref, citation.support) == ("[[Boiler]]", "verbatim")
    assert result.answer.startswith(reply.replace("[1]", "[[Boiler]]"))


async def test_a_quote_is_graded_against_the_chunk_that_holds_it(tmp_path: Path) -> None:
    """Every chunk of a note shares its episode id; each number names one chunk."""
    chunks = [
        ShownItem(
            item_id=f"c{n}",
            episode_id="ep-garden",
            ref="[[Garden]]",
            title="Garden",
            text=text,
        )
        for n, text in enumerate(
            [
                "# Plot\nThe plot is 23B, near the gate.",
                "# Costs\nThe rent is £48 a year, paid in March.",
                "# People\nRon is the secretary.",
            ]
        )
    ]
    model = reasoner(["The rent is £48 a year [2]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(chunks))
    result = await o.asker.ask("me", "What is the rent?")
    [citation] = result.citations
    assert (citation.item_id, citation.support) == ("c1", "verbatim")
    assert citation.quote == "The rent is £48 a year, paid in March."
    cited = o.store.query("SELECT item_id FROM telemetry_retrievals WHERE cited = 1")
    assert [r["item_id"] for r in cited] == ["c1"]


async def test_an_ask_reports_and_keeps_its_claim_check(tmp_path: Path) -> None:
    """Issue 35: a sentence whose figure no cited source holds is cut from the answer; the
    grounding report and the telemetry turn list every specific with its verdict."""
    model = reasoner(["The deposit is £800 [1]. It was paid on 29 February [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory(NOTES))
    result = await o.asker.ask("me", "What did we agree about the deposit?", include_sensitive=True)
    assert not result.abstained
    assert result.answer == "The deposit is £800 [[Flat lease]]."
    assert result.grounding.dropped_claims == ("It was paid on 29 February  .",)
    checked = {(s.text, s.verdict) for s in result.grounding.specifics}
    assert {("£800", "supported"), ("29", "unsupported")} <= checked
    [row] = o.store.query(
        "SELECT claim_check, dropped_claims FROM telemetry_turns WHERE id = ?", result.turn_id
    )
    kept = json.loads(row["claim_check"])
    assert {
        "text": "£800",
        "kind": "figure",
        "verdict": "supported",
        "ref": "[[Flat lease]]",
    } in kept
    assert json.loads(row["dropped_claims"]) == ["It was paid on 29 February  ."]


async def test_an_answer_that_names_a_command_in_part_shows_the_notes_whole_line(
    tmp_path: Path,
) -> None:
    note = ShownItem(
        item_id="c9",
        episode_id="ep-dash",
        ref="[[Remove a directory called -p]]",
        title="Remove a directory called -p",
        text="A folder named `-p` is removed with the rmdir command:\n\n```\n$ rmdir -- -p\n```",
    )
    model = reasoner(["It is removed with the `rmdir` command [1]."])
    o = make_orchestrator(tmp_path, model, FakeMemory([note]))
    result = await o.asker.ask("me", "How do I remove a folder named -p?")
    assert result.answer.endswith(
        "\n\nAs your note writes it: `rmdir -- -p` [[Remove a directory called -p]]"
    )

"""The briefing (SPEC B7)."""

from __future__ import annotations

from memex.orchestrator.briefing import EMPTY_MEMORY_NOTE, render_items
from memex.orchestrator.items import ShownItem


def test_chunks_carry_provenance_and_blocks_are_labelled() -> None:
    items = [
        ShownItem(
            item_id="c1",
            episode_id="3f7f7a68",
            ref="[[Warden retro]]",
            title="Warden retro",
            date="2026-03-14",
            text="Shipped the auth refactor this week.",
        ),
        ShownItem(
            item_id="entities:p7",
            ref="entities:p7",
            kind="record",
            title="Dana Ruiz",
            text="Landlord.",
        ),
        ShownItem(
            item_id="beliefs:b1", ref="beliefs:b1", kind="belief", text="Prefers mornings (active)."
        ),
        ShownItem(
            item_id="observations:o1",
            ref="observations:o1",
            kind="observation",
            date="2026-03-02",
            text="Slept 5h12m.",
        ),
    ]
    text = render_items(items)
    assert text.startswith(
        "Excerpts:\n\nepisode 3f7f7a68 (2026-03-14) Warden retro\nShipped the auth"
    )
    assert "episode entities:p7 Dana Ruiz\nLandlord." in text
    assert (
        "Beliefs (conclusions derived from the notes, not the person's own words):\n- [beliefs:b1]"
        in text
    )
    assert "Observations (records from connected services" in text
    assert "- [observations:o1] (2026-03-02) Slept 5h12m." in text


def test_chunks_are_capped_at_1600_characters() -> None:
    item = ShownItem(item_id="c", episode_id="e", ref="[[N]]", text="word " * 1000)
    body = render_items([item]).split("\n", 3)[3]
    assert len(body) <= 1602
    assert body.endswith(" …")


def test_an_empty_memory_is_said_literally() -> None:
    assert render_items([]) == EMPTY_MEMORY_NOTE

"""Personas (SPEC B6): the built-ins, user files, bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.orchestrator.turn.persona import load_personas
from memex.shared.errors import NotFound


def test_the_built_ins_match_the_spec() -> None:
    personas = load_personas()
    assert personas.names() == ["analyst", "coach", "friend", "skeptic"]
    assert (personas.default_ask, personas.default_chat) == ("analyst", "friend")
    analyst, coach = personas.get("analyst", "ask"), personas.get("coach", "ask")
    friend, skeptic = personas.get("friend", "chat"), personas.get("skeptic", "ask")
    assert [p.chunks for p in (analyst, coach, friend, skeptic)] == [10, 10, 12, 20]
    assert "graph" not in coach.channels
    assert "observations" not in friend.channels
    assert skeptic.include_contested and skeptic.observation_weight > 1
    assert analyst.model_calls == 2  # exactly the plan and synthesize hops
    assert skeptic.model_calls == 4


def test_empty_name_means_the_default_and_unknown_names_are_refused() -> None:
    personas = load_personas()
    assert personas.get("", "ask").name == "analyst"
    assert personas.get("", "chat").name == "friend"
    with pytest.raises(NotFound, match="unknown persona 'poet'; known: analyst"):
        personas.get("poet", "ask")


def test_users_add_and_override_personas_and_broken_files_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "historian.toml").write_text(
        'name = "historian"\nchunks = 15\ndefault_for = ["chat"]\nsystem_prompt = "Dates first."\n'
    )
    (tmp_path / "analyst.toml").write_text(
        'name = "analyst"\nchunks = 4\nsystem_prompt = "Terse."\n'
    )
    (tmp_path / "broken.toml").write_text('name = "broken"\nchunks = "many"\n')
    (tmp_path / "nosynth.toml").write_text('name = "x"\nstages = ["plan"]\nsystem_prompt = "?"\n')
    personas = load_personas(tmp_path)
    assert personas.get("historian", "ask").chunks == 15
    assert personas.get("analyst", "ask").chunks == 4
    assert personas.default_chat == "historian"
    assert "broken" not in personas.names()
    assert "x" not in personas.names()
    assert "broken.toml" in caplog.text and "nosynth.toml" in caplog.text

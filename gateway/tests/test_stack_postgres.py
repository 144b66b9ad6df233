"""`memex up --state postgres`: the stack's local PostgreSQL, its ports and who uses it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memex.cli.stack.services import stack_services
from memex.shared.stack_settings import StackSettings
from memex.testing import ports


def settings(tmp_path: Path, **fields: object) -> StackSettings:
    return StackSettings.model_validate({"data_dir": tmp_path, **fields})


def test_postgres_runs_first_and_the_orchestrator_and_worker_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMEX_ORCHESTRATOR_STATE_URL", raising=False)
    stack = settings(tmp_path, state="postgres", postgres_port=54400)
    services = {s.name: s for s in stack_services(stack)}
    assert next(iter(services)) == "postgres"
    assert services["postgres"].env["MEMEX_POSTGRES_PORT"] == "54400"
    url = "postgresql://memex@127.0.0.1:54400/memex"
    assert services["orchestrator"].env["MEMEX_ORCHESTRATOR_STATE_URL"] == url
    assert services["worker"].env["MEMEX_ORCHESTRATOR_STATE_URL"] == url
    assert "MEMEX_POSTGRES_PORT" in stack.listening_ports()


def test_a_given_state_url_runs_no_postgres(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEX_ORCHESTRATOR_STATE_URL", "postgresql://me@db.example:5432/memex")
    stack = settings(tmp_path, state="postgres")
    services = {s.name: s for s in stack_services(stack)}
    assert "postgres" not in services
    assert "MEMEX_ORCHESTRATOR_STATE_URL" not in services["orchestrator"].env  # inherited as is
    assert "MEMEX_POSTGRES_PORT" not in stack.listening_ports()


def test_postgres_ports_are_checked_only_when_postgres_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMEX_ORCHESTRATOR_STATE_URL", raising=False)
    assert "postgres" not in {s.name for s in stack_services(settings(tmp_path))}
    settings(tmp_path, postgres_port=50054, orchestrator_port=50054)  # sqlite: unused port
    with pytest.raises(ValidationError, match="MEMEX_ORCHESTRATOR_PORT and MEMEX_POSTGRES_PORT"):
        settings(tmp_path, state="postgres", postgres_port=50054, orchestrator_port=50054)


def test_no_default_port_of_the_stack_is_one_a_test_draws() -> None:
    """A test that pins some ports and leaves the rest at their defaults (``free_ports``)."""
    drawn = range(ports.PORT_BASE, ports.PORT_BASE + ports.PORT_BLOCK * ports.PORT_BLOCKS)
    defaults = {
        name: field.default
        for name, field in StackSettings.model_fields.items()
        if name.endswith("_port")
    }
    assert {name: port for name, port in defaults.items() if port in drawn} == {}

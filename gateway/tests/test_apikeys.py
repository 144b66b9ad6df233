"""API keys at rest (hashes only, owner-only file) and `memex keys create|list|revoke`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from memex.cli.main import main
from memex.cli.stack.services import stack_services
from memex.gateway import apikeys
from memex.shared.errors import AlreadyExists, InvalidArgument, NotFound
from memex.shared.stack_settings import StackSettings


def test_a_key_is_stored_as_a_hash_in_an_owner_only_file(tmp_path: Path) -> None:
    path = tmp_path / "gateway" / "keys.json"
    token = apikeys.create_key(path, "laptop")
    assert token.startswith("mx_") and len(token) > 40
    assert token not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    [key] = apikeys.load_keys(path)
    assert key.name == "laptop" and key.sha256 == apikeys.hash_token(token)
    assert apikeys.verify([key], token) == key
    assert apikeys.verify([key], token + "x") is None


def test_names_are_checked_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    apikeys.create_key(path, "a")
    with pytest.raises(AlreadyExists):
        apikeys.create_key(path, "a")
    with pytest.raises(InvalidArgument, match="key name"):
        apikeys.create_key(path, "no spaces")
    with pytest.raises(NotFound):
        apikeys.revoke_key(path, "b")


def test_a_damaged_file_is_an_error_not_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{nope")
    with pytest.raises(InvalidArgument, match=str(path)):
        apikeys.load_keys(path)
    path.write_text(json.dumps({"keys": [{"name": "x"}]}))
    with pytest.raises(InvalidArgument, match="expected format"):
        apikeys.load_keys(path)
    assert apikeys.load_keys(tmp_path / "absent.json") == []


def test_the_key_ring_rereads_a_changed_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    ring = apikeys.KeyRing(path)
    assert ring.keys() == []
    token = apikeys.create_key(path, "one")
    assert ring.verify(token) is not None
    apikeys.revoke_key(path, "one")
    assert ring.verify(token) is None


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_keys_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMEX_DATA_DIR", str(tmp_path))
    code, out, err = run(capsys, "keys", "create", "phone")
    assert code == 0 and "shown only now" in err
    token = out.strip()
    assert apikeys.verify(apikeys.load_keys(tmp_path / "gateway" / "keys.json"), token)

    code, out, _ = run(capsys, "keys", "list", "--json")
    [listed] = json.loads(out)["keys"]
    assert listed["name"] == "phone" and token[:7] == listed["hint"] and token not in out
    assert run(capsys, "keys", "create", "phone")[0] == 2
    assert run(capsys, "keys", "revoke", "phone")[0] == 0
    code, _, err = run(capsys, "keys", "revoke", "phone")
    assert code == 4 and "no key named 'phone'" in err
    assert "no API keys yet" in run(capsys, "keys", "list")[1]


def test_the_stack_runs_the_gateway_last_with_its_keys_and_deep_checks(tmp_path: Path) -> None:
    settings = StackSettings(data_dir=tmp_path, gateway_port=18765)
    services = stack_services(settings)
    gateway = services[-1]
    assert gateway.name == "gateway" and gateway.module == "memex.gateway"
    assert gateway.health_url == "http://127.0.0.1:18765/healthz"
    assert gateway.env["MEMEX_GATEWAY_KEYS_FILE"] == str(tmp_path / "gateway" / "keys.json")
    assert gateway.env["MEMEX_GATEWAY_ORCHESTRATOR_ADDR"] == settings.orchestrator_addr
    checks = json.loads(gateway.env["MEMEX_GATEWAY_HEALTH_CHECKS"])
    assert set(checks) == {s.name for s in services[:-1]}
    weaviate = stack_services(settings.model_copy(update={"store": "weaviate"}))
    assert json.loads(weaviate[-1].env["MEMEX_GATEWAY_HEALTH_CHECKS"])["weaviate"].startswith(
        "http://"
    )

"""An answer's evidence bundle over HTTP (GET /v1/evidence/{turn_id}) and the CLI (`memex
evidence`), in front of the fake orchestrator: the download headers, the read grant for sensitive
excerpts, errors, the published spec. The bundle itself (what it holds, the read policy, where it
is kept) is the orchestrator's: services/orchestrator/tests/test_evidence.py and, on the real
stack, tests/e2e/test_evidence.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from memex.gateway import apikeys
from memex.gateway.present_evidence import EvidenceBundle

from .support.harness import Gateway, running_gateway


def test_a_bundle_downloads_as_a_json_file_without_its_sensitive_excerpt(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/evidence/turn-ask", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    disposition = response.headers["content-disposition"]
    assert disposition == 'attachment; filename="memex-evidence-turn-ask.json"'
    bundle = EvidenceBundle.model_validate(response.json())
    assert bundle.turn_id == "turn-ask" and bundle.left_out.excerpts == 1
    assert response.json()["excerpts"][1] == {"number": 2, "left_out": "sensitive"}
    assert not gateway.orchestrator.evidence_requests[-1].include_sensitive

    # A keyless loopback caller is the owner: asking brings the excerpt back.
    whole = httpx.get(f"{gateway.url}/v1/evidence/turn-ask?include_sensitive=true", timeout=30)
    assert whole.status_code == 200 and whole.json()["excerpts"][1]["sensitive"] is True
    assert gateway.orchestrator.evidence_requests[-1].include_sensitive


def test_an_unknown_answer_is_a_404_with_the_error_shape(gateway: Gateway) -> None:
    response = httpx.get(f"{gateway.url}/v1/evidence/nothing-here", timeout=30)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert "nothing-here" in response.json()["error"]["message"]


def test_the_route_is_in_the_published_spec_with_its_download_header(gateway: Gateway) -> None:
    spec = httpx.get(f"{gateway.url}/openapi.json", timeout=30).json()
    operation = spec["paths"]["/v1/evidence/{turn_id}"]["get"]
    assert {"200", "401", "403", "404"} <= set(operation["responses"])
    ok = operation["responses"]["200"]
    assert "Content-Disposition" in ok["headers"]
    assert ok["content"]["application/json"]["schema"]["$ref"].endswith("/EvidenceBundle")
    assert {p["name"] for p in operation["parameters"]} == {"turn_id", "include_sensitive"}


def test_keys_are_required_as_elsewhere_and_sensitive_excerpts_need_the_grant(
    tmp_path: Path,
) -> None:
    keys = tmp_path / "keys.json"
    plain = apikeys.create_key(keys, "plain")
    granted = apikeys.create_key(keys, "granted", sensitive=True)
    with (
        running_gateway(tmp_path, require_keys=True, rate_limit_per_minute=0) as g,
        httpx.Client(base_url=g.url, timeout=30) as c,
    ):
        assert c.get("/v1/evidence/turn-ask").status_code == 401
        as_plain = {"Authorization": f"Bearer {plain}"}
        assert c.get("/v1/evidence/turn-ask", headers=as_plain).status_code == 200
        refused = c.get("/v1/evidence/turn-ask?include_sensitive=true", headers=as_plain)
        assert refused.status_code == 403
        assert "--sensitive" in refused.json()["error"]["message"]
        as_granted = {"Authorization": f"Bearer {granted}"}
        allowed = c.get("/v1/evidence/turn-ask?include_sensitive=true", headers=as_granted)
        assert allowed.status_code == 200 and allowed.json()["left_out"]["excerpts"] == 0


def memex(gateway: Gateway, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    port = gateway.settings.orchestrator_addr.rsplit(":", 1)[1]
    env = {**os.environ, "MEMEX_DATA_DIR": str(tmp_path), "MEMEX_ORCHESTRATOR_PORT": port}
    return subprocess.run(
        [sys.executable, "-m", "memex.cli", "evidence", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_cli_prints_or_saves_a_bundle_and_says_what_it_left_out(
    gateway: Gateway, tmp_path: Path
) -> None:
    printed = memex(gateway, tmp_path, "turn-ask")
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["excerpts"][1] == {"number": 2, "left_out": "sensitive"}

    out = tmp_path / "bundle.json"
    saved = memex(gateway, tmp_path, "turn-ask", "-o", str(out), "--include-sensitive")
    assert saved.returncode == 0, saved.stderr
    assert saved.stderr == f"wrote {out}: 2 excerpts, 1 citations\n"
    bundle = json.loads(out.read_text(encoding="utf-8"))
    assert bundle["answer"] == "Graham returned £1,030." and bundle["excerpts"][1]["sensitive"]

    shared = memex(gateway, tmp_path, "turn-ask", "-o", str(out))
    assert "1 sensitive left out (--include-sensitive keeps them)" in shared.stderr


def test_a_bundle_as_of_a_day_says_so(gateway: Gateway, tmp_path: Path) -> None:
    """docs/as-of.md: the bundle records the day whose memory answered; the CLI says it."""
    response = httpx.get(f"{gateway.url}/v1/evidence/turn-as-of", timeout=30)
    assert response.status_code == 200 and response.json()["as_of"] == "2026-02-01"
    assert httpx.get(f"{gateway.url}/v1/evidence/turn-ask", timeout=30).json()["as_of"] == ""

    printed = memex(gateway, tmp_path, "turn-as-of", "--tenant", "alice")
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["as_of"] == "2026-02-01"
    assert printed.stderr.startswith("As of: 2026-02-01")
    assert gateway.orchestrator.evidence_requests[-1].tenant == "alice"
    out = tmp_path / "bundle.json"
    saved = memex(gateway, tmp_path, "turn-as-of", "-o", str(out))
    assert saved.stderr.splitlines()[1].startswith("As of: 2026-02-01")
    now = memex(gateway, tmp_path, "turn-ask")
    assert now.returncode == 0 and "As of" not in now.stderr


def test_the_cli_exit_codes_say_what_went_wrong(gateway: Gateway, tmp_path: Path) -> None:
    missing = memex(gateway, tmp_path, "nothing-here")
    assert missing.returncode == 4 and "NOT_FOUND" in missing.stderr
    blank = memex(gateway, tmp_path, " ")
    assert blank.returncode == 2 and "give the answer's id" in blank.stderr
    folder = memex(gateway, tmp_path, "turn-ask", "-o", str(tmp_path))
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    nowhere = memex(gateway, tmp_path, "turn-ask", "-o", str(tmp_path / "no" / "such.json"))
    assert nowhere.returncode == 2 and "cannot write" in nowhere.stderr

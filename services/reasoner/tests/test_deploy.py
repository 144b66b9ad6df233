"""deploy/ mirrors the settings: every MEMEX_REASONER_* variable there is a real setting."""

from __future__ import annotations

import re
from pathlib import Path

from memex.reasoner.config import ReasonerSettings

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def test_every_reasoner_variable_in_deploy_is_a_setting() -> None:
    manifests = sorted(DEPLOY.glob("*.yaml"))
    assert manifests, f"no manifests in {DEPLOY}"
    settings = {f"MEMEX_REASONER_{name.upper()}" for name in ReasonerSettings.model_fields}
    used = {
        name
        for path in manifests
        for name in re.findall(r"\bMEMEX_REASONER_[A-Z0-9_]+", path.read_text())
    }
    assert used, "no manifest configures the reasoner"
    assert used <= settings, f"not settings: {sorted(used - settings)}"


def test_the_vllm_manifest_puts_vllm_behind_the_openai_engine() -> None:
    text = (DEPLOY / "reasoner-vllm.yaml").read_text()
    assert "command: [vllm, serve]" in text
    assert "nvidia.com/gpu: 1" in text
    assert "{name: MEMEX_REASONER_ENGINE, value: openai}" in text
    assert 'value: "http://memex-vllm:8000/v1"' in text

"""memex's Prometheus rules (deploy/prometheus/memex.rules.yml) are valid, their unit tests pass,
and every alert has a unit test where it fires and one where it stays quiet."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from memex.testing import REPO_ROOT, require

RULES = REPO_ROOT / "deploy" / "prometheus" / "memex.rules.yml"
RULE_TESTS = REPO_ROOT / "deploy" / "prometheus" / "tests" / "memex.rules.test.yml"


def promtool() -> Path:
    """Debian's promtool; the test is skipped without it (failed under CI)."""
    found = shutil.which("promtool")
    return require(Path(found or "/usr/bin/promtool"), "install it with `make prometheus`")


def run_promtool(*args: str) -> None:
    result = subprocess.run(
        [str(promtool()), *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, f"promtool {' '.join(args)}:\n{result.stdout}{result.stderr}"


def test_rules_are_valid() -> None:
    run_promtool("check", "rules", str(RULES))


def test_rule_unit_tests_pass() -> None:
    run_promtool("test", "rules", str(RULE_TESTS))


def _load(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), f"{path} is not a YAML mapping"
    return loaded


def alert_names() -> set[str]:
    """Every alert the rules file defines."""
    groups = _load(RULES)["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule}


def alert_cases() -> tuple[set[str], set[str]]:
    """The alerts the unit tests expect to fire somewhere, and those they expect quiet."""
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in _load(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    return firing, quiet


def test_the_rules_define_alerts() -> None:
    assert alert_names(), f"{RULES} defines no alerts"


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    firing, quiet = alert_cases()
    alerts = alert_names()
    assert not alerts - firing, (
        f"alerts with no unit test where they fire: {sorted(alerts - firing)}; add one to "
        f"{RULE_TESTS.relative_to(REPO_ROOT)}"
    )
    assert not alerts - quiet, (
        f"alerts with no unit test where they stay quiet (exp_alerts: []): "
        f"{sorted(alerts - quiet)}; add one to {RULE_TESTS.relative_to(REPO_ROOT)}"
    )
    unknown = (firing | quiet) - alerts
    assert not unknown, f"the unit tests name alerts the rules do not define: {sorted(unknown)}"

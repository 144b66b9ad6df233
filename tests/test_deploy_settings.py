"""Every MEMEX_* variable that deploy/ sets is a real setting of some service."""

from __future__ import annotations

import importlib
import re

from pydantic_settings import BaseSettings

from memex.shared.testing import REPO_ROOT

STAGES = ("embedding", "retrieval", "reasoner", "orchestrator", "gateway")


def settings_classes() -> list[type[BaseSettings]]:
    for stage in STAGES:
        try:
            importlib.import_module(f"memex.{stage}.config")
        except ModuleNotFoundError:
            continue  # that service is not part of this installation
    importlib.import_module("memex.gateway.stack")
    found: list[type[BaseSettings]] = []
    pending: list[type[BaseSettings]] = [BaseSettings]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def known_variables() -> set[str]:
    names = set()
    for cls in settings_classes():
        prefix = cls.model_config.get("env_prefix") or ""
        if prefix.startswith("MEMEX_"):
            names |= {f"{prefix}{field}".upper() for field in cls.model_fields}
    return names


def test_every_memex_variable_in_deploy_is_a_setting() -> None:
    known = known_variables()
    used = {
        (path.name, name)
        for path in (REPO_ROOT / "deploy").rglob("*.yaml")
        for name in re.findall(r"name:\s*(MEMEX_[A-Z0-9_]+)", path.read_text())
    }
    assert used, "deploy/ sets no MEMEX_ variables: is the manifest pattern still matched?"
    unknown = sorted(f"{file}: {name}" for file, name in used if name not in known)
    assert not unknown, f"not settings of any service: {unknown}"

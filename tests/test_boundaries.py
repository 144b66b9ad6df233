"""The layering rules, checked on every import in the source tree (not the tests):

- the common library (``memex.shared``) knows no stage and no surface: it imports neither a
  stage's code nor its contract, nor ``memex.gateway``;
- a surface (``memex.gateway``: HTTP, MCP, the CLI) talks to stages only through their gRPC
  contracts (``memex.<stage>.v1``), never through a stage's internals;
- a stage imports no surface and no other stage's internals.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.shared.testing import REPO_ROOT

STAGES = ("embedding", "retrieval", "reasoner", "orchestrator")
SOURCES = {
    "shared": REPO_ROOT / "shared" / "src" / "memex" / "shared",
    "gateway": REPO_ROOT / "gateway" / "src" / "memex" / "gateway",
    **{stage: REPO_ROOT / "services" / stage / "src" / "memex" / stage for stage in STAGES},
}


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Every absolute module a file imports, with its line, including imports inside functions."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def forbidden(part: str, module: str) -> str | None:
    """Why ``part`` may not import ``module``, or None when it may."""
    names = module.split(".")
    if names[0] != "memex" or len(names) < 2:
        return None
    target = names[1]
    is_contract = len(names) > 2 and names[2] == "v1"
    if part == "shared" and target in (*STAGES, "gateway"):
        return "the common library knows no stage and no surface"
    if part == "gateway" and target in STAGES and not is_contract:
        return "a surface uses a stage only through its gRPC contract"
    if part in STAGES and target == "gateway":
        return "a stage imports no surface"
    if part in STAGES and target in STAGES and target != part and not is_contract:
        return "a stage uses another stage only through its gRPC contract"
    return None


def violations(part: str) -> list[str]:
    """The forbidden imports in one part's sources, as ``path:line: module (rule)``."""
    found = []
    for path in sorted(SOURCES[part].rglob("*.py")):
        if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
            continue
        for line, module in imported_modules(path):
            if rule := forbidden(part, module):
                found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {module} ({rule})")
    return found


@pytest.mark.parametrize("part", sorted(SOURCES))
def test_imports_follow_the_layering(part: str) -> None:
    assert violations(part) == []


def test_the_rules_catch_what_they_forbid() -> None:
    assert forbidden("shared", "memex.gateway.stack")
    assert forbidden("shared", "memex.retrieval.v1.retrieval_pb2")
    assert forbidden("gateway", "memex.orchestrator.store")
    assert forbidden("retrieval", "memex.gateway.app")
    assert forbidden("orchestrator", "memex.retrieval.store")
    assert forbidden("gateway", "memex.orchestrator.v1.orchestrator_pb2") is None
    assert forbidden("orchestrator", "memex.retrieval.v1.retrieval_pb2") is None
    assert forbidden("gateway", "memex.shared.errors") is None

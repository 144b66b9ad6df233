"""The layering rules, checked on every import in the source tree (not the tests):

- the common library (``memex.shared``) knows no stage and no surface: it imports neither a
  stage's code nor its contract, nor ``memex.gateway`` or ``memex.cli``;
- a surface (``memex.gateway``: HTTP and MCP; ``memex.cli``: the `memex` command, its stack
  supervisor and `memex eval`) talks to stages only through their gRPC contracts
  (``memex.<stage>.v1``), never through a stage's internals;
- the HTTP and MCP surfaces do not import the CLI: ``memex.cli`` may use ``memex.gateway`` (API
  keys, what a surface says when memex is not running, running the MCP server), never the reverse;
- a stage imports no surface and no other stage's internals;
- inside the orchestrator, only ``wire/`` (and ``server.py``, which registers the servicer) touches
  protobuf: no other module imports a ``memex.<x>.v1`` contract or ``google.protobuf``;
- nothing shipped (a module under any ``src/``) imports test support: ``pytest`` or
  ``memex.testing`` (memex-testing, tests/support/, installed for development and CI only).

An import is any of: ``import m`` and ``from m import x`` (inside functions too), relative imports
resolved against the file's package, and a module run with ``python -m`` from a string (``"-m
memex.x"`` in one string, or ``"-m", "memex.x"`` side by side in a list, a tuple or a call's
arguments), since running a module couples to its path as much as importing it does. Docstrings
do not count: they say how to run a module, not that the code does.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.testing import REPO_ROOT

STAGES = ("embedding", "retrieval", "reasoner", "orchestrator")
SURFACES = ("gateway", "cli")
SOURCES = {
    "shared": REPO_ROOT / "shared" / "src" / "memex" / "shared",
    "gateway": REPO_ROOT / "gateway" / "src" / "memex" / "gateway",
    "cli": REPO_ROOT / "gateway" / "src" / "memex" / "cli",
    **{stage: REPO_ROOT / "services" / stage / "src" / "memex" / stage for stage in STAGES},
}


# "-m memex.x" inside one string; a module in a list or a call's arguments is found by pairs.
RUN_MODULE = re.compile(r"(?:^|\s)-m\s+(memex(?:\.\w+)+)")


def imported_modules(
    source: str, package: str, filename: str = "<string>"
) -> Iterator[tuple[int, str]]:
    """Every module some source imports or runs with ``-m``, with its line (see the module's
    docstring); ``package`` is the source's package, which relative imports are resolved against."""
    tree = ast.parse(source, filename)
    docstrings = {id(doc) for node in ast.walk(tree) if (doc := _docstring(node))}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.lineno, node.module
                if node.module == "memex":  # the namespace has no names: x is a package of it
                    yield from ((node.lineno, f"memex.{alias.name}") for alias in node.names)
            elif node.level and (base := _relative_base(package, node.level)):
                if node.module:
                    yield node.lineno, f"{base}.{node.module}"
                else:  # from . import x: x is a module of the package (or a name in it)
                    yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield from ((node.lineno, m) for m in RUN_MODULE.findall(node.value))
        if isinstance(node, ast.Call | ast.List | ast.Tuple):
            items = node.args if isinstance(node, ast.Call) else node.elts
            for flag, module in itertools.pairwise(items):
                if _string(flag) == "-m" and (name := _string(module)):
                    yield module.lineno, name


def _docstring(node: ast.AST) -> ast.AST | None:
    """The string literal that is a module's, class's or function's docstring, if it has one."""
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    if isinstance(node, kinds) and node.body and isinstance(first := node.body[0], ast.Expr):
        return first.value if _string(first.value) is not None else None
    return None


def _string(node: ast.AST) -> str | None:
    """The text of a string literal, else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _relative_base(package: str, level: int) -> str | None:
    """The package a relative import of ``level`` dots starts from, or None above the top."""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - level + 1]) if level <= len(parts) else None


def forbidden(part: str, module: str) -> str | None:
    """Why ``part`` may not import ``module``, or None when it may."""
    names = module.split(".")
    if names[0] != "memex" or len(names) < 2:
        return None
    target = names[1]
    is_contract = len(names) > 2 and names[2] == "v1"
    if part == "shared" and target in (*STAGES, *SURFACES):
        return "the common library knows no stage and no surface"
    if part in SURFACES and target in STAGES and not is_contract:
        return "a surface uses a stage only through its gRPC contract"
    if part == "gateway" and target == "cli":
        return "the HTTP and MCP surfaces do not import the CLI (the CLI may use them)"
    if part in STAGES and target in SURFACES:
        return "a stage imports no surface"
    if part in STAGES and target in STAGES and target != part and not is_contract:
        return "a stage uses another stage only through its gRPC contract"
    return None


# Breaks of the rules that are known and kept for now, each said here with why, never passed over
# in silence; a test fails when one is no longer found, so the list cannot go stale.
# - `memex worker` execs the orchestrator's queued-turn worker in the foreground, as `memex up`
#   starts it (cli/stack/processes.py names the same module as the worker's ServiceDef.module, which
#   this scan does not read, nor the stack's other module names). Starting a stage's process is the
#   supervisor's work, but the module path still ties the surface to the stage's internals: an
#   entry point of the stage's own (``python -m memex.orchestrator worker``) would end it.
KNOWN = frozenset(
    {"gateway/src/memex/cli/stack/commands.py: memex.orchestrator.queue.worker"},
)


def part_imports(part: str) -> Iterator[tuple[Path, int, str]]:
    """Every import in one part's sources (generated code aside), as (file, line, module)."""
    src = SOURCES[part].parents[1]  # .../src, the root of the dotted names
    for path in sorted(SOURCES[part].rglob("*.py")):
        if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
            continue
        package = ".".join(path.parent.relative_to(src).parts)
        source = path.read_text(encoding="utf-8")
        for line, module in imported_modules(source, package, str(path)):
            yield path, line, module


def violations(part: str) -> list[tuple[str, str]]:
    """The forbidden imports in one part's sources, each as its ``path: module`` (what ``KNOWN``
    holds) and ``path:line: module (rule)``."""
    found = []
    for path, line, module in part_imports(part):
        if rule := forbidden(part, module):
            where = path.relative_to(REPO_ROOT)
            found.append((f"{where}: {module}", f"{where}:{line}: {module} ({rule})"))
    return found


@pytest.mark.parametrize("part", sorted(SOURCES))
def test_imports_follow_the_layering(part: str) -> None:
    assert [message for key, message in violations(part) if key not in KNOWN] == []


def test_the_known_breaks_are_still_there() -> None:
    found = {key for part in SOURCES for key, _ in violations(part)}
    assert found >= KNOWN, f"no longer found, so remove from KNOWN: {sorted(KNOWN - found)}"


def test_the_rules_catch_what_they_forbid() -> None:
    assert forbidden("shared", "memex.gateway.present")
    assert forbidden("shared", "memex.retrieval.v1.retrieval_pb2")
    assert forbidden("gateway", "memex.orchestrator.state.store")
    assert forbidden("retrieval", "memex.gateway.app")
    assert forbidden("orchestrator", "memex.retrieval.store")
    assert forbidden("gateway", "memex.orchestrator.v1.orchestrator_pb2") is None
    assert forbidden("orchestrator", "memex.retrieval.v1.retrieval_pb2") is None
    assert forbidden("gateway", "memex.shared.errors") is None
    assert forbidden("cli", "memex.orchestrator.store")
    assert forbidden("shared", "memex.cli.stack.services")
    assert forbidden("retrieval", "memex.cli.main")
    assert forbidden("cli", "memex.orchestrator.v1.orchestrator_pb2") is None
    assert forbidden("cli", "memex.gateway.apikeys") is None


WIRE = frozenset({"wire", "server.py"})  # the orchestrator's only places that touch protobuf


def touches_protobuf(module: str) -> bool:
    """Whether importing ``module`` reaches protobuf: a stage's contract or the library itself."""
    names = module.split(".")
    return module.startswith("google.protobuf") or (
        names[0] == "memex" and len(names) > 2 and names[2] == "v1"
    )


def test_only_the_orchestrators_wire_touches_protobuf() -> None:
    root = SOURCES["orchestrator"]
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path, line, module in part_imports("orchestrator")
        if path.relative_to(root).parts[0] not in WIRE and touches_protobuf(module)
    ]
    assert found == [], "translate protobuf in the orchestrator's wire/ only"


def test_the_wire_rule_catches_what_it_forbids() -> None:
    source = textwrap.dedent(
        """
        from memex.orchestrator.v1 import orchestrator_pb2
        from ..v1 import orchestrator_pb2 as pb
        from google.protobuf import json_format
        from memex.orchestrator.answer import sources
        import grpc
        """
    )
    found = [m for _, m in imported_modules(source, "memex.orchestrator.ask")]
    assert [m for m in found if touches_protobuf(m)] == [
        "memex.orchestrator.v1",
        "memex.orchestrator.v1",
        "google.protobuf",
    ]


def test_the_gateway_may_not_import_the_cli() -> None:
    assert forbidden("gateway", "memex.cli")
    assert forbidden("gateway", "memex.cli.stack.services")
    # Every way of reaching it from a module of memex.gateway.mcp is found and refused: absolute,
    # relative, and running it with -m.
    source = textwrap.dedent(
        """
        from memex.cli.main import main
        from ...cli import observe
        from ...cli.stack import services
        os.execvp(sys.executable, [sys.executable, "-m", "memex.cli", "up"])
        """
    )
    found = [m for _, m in imported_modules(source, "memex.gateway.mcp")]
    assert found == ["memex.cli.main", "memex.cli", "memex.cli.stack", "memex.cli"]
    assert all(forbidden("gateway", m) for m in found)


def test_the_scan_finds_relative_imports_and_modules_run_with_dash_m() -> None:
    source = textwrap.dedent(
        '''
        """Start it with ``python -m memex.gateway``: a docstring, not a use."""
        import subprocess, sys
        from . import stack
        from ..retrieval.store import open_store
        from .. import gateway
        from ..... import too_far
        subprocess.run([sys.executable, "-m", "memex.retrieval.whisper_models", "--out", "x"])
        spawn(sys.executable, "-m", "memex.orchestrator.queue.worker", env={})
        os.system("python -m memex.reasoner.prepare --model tiny")
        run(("pg_ctl", "-m", "fast", "stop"))
        '''
    )
    found = set(imported_modules(source, "memex.shared"))
    assert found == {
        (3, "subprocess"),
        (3, "sys"),
        (4, "memex.shared.stack"),
        (5, "memex.retrieval.store"),
        (6, "memex.gateway"),
        (8, "memex.retrieval.whisper_models"),
        (9, "memex.orchestrator.queue.worker"),
        (10, "memex.reasoner.prepare"),
        (11, "fast"),  # not memex's: no rule looks at it
    }
    assert [m for _, m in sorted(found) if forbidden("shared", m)] == [
        "memex.retrieval.store",
        "memex.gateway",
        "memex.retrieval.whisper_models",
        "memex.orchestrator.queue.worker",
        "memex.reasoner.prepare",
    ]
    # Relative imports resolve from the file's package: a surface may reach a stage's contract.
    assert list(imported_modules("from ..orchestrator.v1 import x_pb2", "memex.gateway")) == [
        (1, "memex.orchestrator.v1")
    ]
    assert forbidden("gateway", "memex.orchestrator.v1") is None


# Test support is installed for development and CI only (the root's dev group): a shipped module
# that imported it would fail where the services run. tests/support/src is no shipped source.
TEST_SUPPORT = ("pytest", "memex.testing")
SHIPPED = sorted([*REPO_ROOT.glob("*/src"), *REPO_ROOT.glob("services/*/src")])


def is_test_support(module: str) -> bool:
    """Whether ``module`` is test support: pytest, memex.testing, or a module inside either."""
    return any(module == name or module.startswith(f"{name}.") for name in TEST_SUPPORT)


def imports_of_test_support(src: Path) -> list[str]:
    """Each ``path:line: module`` under a ``src`` folder that imports (or runs) test support."""
    found = []
    for path in sorted(src.rglob("*.py")):
        package = ".".join(path.parent.relative_to(src).parts)
        source = path.read_text(encoding="utf-8")
        for line, module in imported_modules(source, package, str(path)):
            if is_test_support(module):
                found.append(f"{path.relative_to(src)}:{line}: {module}")
    return found


def test_nothing_shipped_imports_test_support() -> None:
    assert len(SHIPPED) >= 2 + len(STAGES), SHIPPED  # shared, gateway, the stages: all found
    assert [hit for src in SHIPPED for hit in imports_of_test_support(src)] == []


def test_the_test_support_scan_finds_each_form(tmp_path: Path) -> None:
    module = tmp_path / "src" / "memex" / "shared" / "leak.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        textwrap.dedent(
            """
            import pytest
            from memex.testing import free_port
            from memex.testing.ports import port_block
            from memex import testing
            from ..testing import serving
            import pytest_asyncio, memex.testing_notes
            from memex.shared import testing as clock
            """
        )
    )
    assert imports_of_test_support(tmp_path / "src") == [
        f"memex/shared/leak.py:{line}: {module}"
        for line, module in [
            (2, "pytest"),
            (3, "memex.testing"),
            (4, "memex.testing.ports"),
            (5, "memex.testing"),
            (6, "memex.testing"),
        ]
    ]

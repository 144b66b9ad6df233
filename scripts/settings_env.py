"""Prints every MEMEX_* environment variable a memex process in a pod reads, one a line, with the
package whose settings class reads it (``MEMEX_EMBEDDING_PORT embedding``; ``shared`` for the
settings every service reads, such as MEMEX_INTERNAL_AUTH).

It walks the real pydantic-settings classes (each service's config.py, the gateway's, the shared
ones), so deploy/check's Go test compares the manifests with the settings as they are today:
a renamed or removed setting fails `make deploy-check`. ``--out FILE`` writes the list to a file.

Left out: the settings of processes that never run in a pod (``memex up``'s StackSettings, the
Weaviate and PostgreSQL it starts for itself, the MCP server on the user's machine), so a
manifest that sets one of them (they would be ignored there) fails the check too.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from pydantic_settings import BaseSettings

STAGES = ("embedding", "retrieval", "reasoner", "orchestrator", "gateway")
# PostgresServerSettings: the local PostgreSQL `memex up --state postgres` runs for itself.
NOT_IN_A_POD = {"StackSettings", "WeaviateServerSettings", "McpSettings", "PostgresServerSettings"}


def settings_classes() -> list[type[BaseSettings]]:
    """Every BaseSettings subclass memex defines, once each service's config is imported."""
    for stage in STAGES:
        try:
            importlib.import_module(f"memex.{stage}.config")
        except ModuleNotFoundError:
            continue  # that service is not part of this installation
    importlib.import_module("memex.shared.settings")
    found: list[type[BaseSettings]] = []
    pending: list[type[BaseSettings]] = list(BaseSettings.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def pod_variables() -> dict[str, str]:
    """The MEMEX_* variables of every settings class a process in a pod reads, each with the
    package that reads it (memex.<package>.…)."""
    names: dict[str, str] = {}
    for cls in settings_classes():
        prefix = cls.model_config.get("env_prefix") or ""
        if cls.__name__ in NOT_IN_A_POD or not prefix.startswith("MEMEX_"):
            continue
        package = cls.__module__.split(".")[1]
        names |= {f"{prefix}{field}".upper(): package for field in cls.model_fields}
    return names


def main() -> None:
    """Prints (or writes with --out) the sorted variable names and their packages."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the list here instead of stdout")
    args = parser.parse_args()
    names = pod_variables()
    text = "".join(f"{name} {names[name]}\n" for name in sorted(names))
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()

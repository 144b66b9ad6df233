"""Each store module imports on its own in a fresh interpreter, as the service does when it opens
the configured backend (an import cycle hides in a test run that imported the other side first;
one stopped every Weaviate stack from starting)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "memex.retrieval.store.weaviate",
        "memex.retrieval.store.embedded",
        "memex.retrieval.store.keyword_terms",
        "memex.retrieval.__main__",
    ],
)
def test_a_store_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr

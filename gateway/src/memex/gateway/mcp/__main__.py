"""`python -m memex.gateway.mcp` (what `memex mcp` runs): the MCP server on stdio.

stdout carries the protocol, so logs go to stderr only.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from memex.gateway.mcp.server import build_server
from memex.gateway.mcp.settings import McpSettings
from memex.shared.settings import describe_invalid
from memex.shared.stack_settings import StackSettings

S = TypeVar("S", bound=BaseSettings)


def main() -> None:
    """Serves MCP on stdin/stdout until the client closes it."""
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("MEMEX_LOG_LEVEL", "WARNING").upper()
    )
    build_server(_load(StackSettings), mcp_settings=_load(McpSettings)).run("stdio")


def _load(settings: type[S]) -> S:
    """``settings`` from the environment; invalid ones exit 2 naming what to fix."""
    try:
        return settings()
    except ValidationError as exc:
        print(describe_invalid(exc, settings), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()

"""`python -m memex.gateway.mcp` (what `memex mcp` runs): the MCP server on stdio.

stdout carries the protocol, so logs go to stderr only.
"""

from __future__ import annotations

import logging
import os
import sys

from pydantic import ValidationError

from memex.gateway.mcp.server import build_server
from memex.gateway.mcp.settings import McpSettings
from memex.gateway.stack import StackSettings


def main() -> None:
    """Serves MCP on stdin/stdout until the client closes it."""
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("MEMEX_LOG_LEVEL", "WARNING").upper()
    )
    try:
        settings = StackSettings()
        mcp_settings = McpSettings()
    except ValidationError as exc:
        print(f"invalid MEMEX_* setting:\n{exc}", file=sys.stderr)
        sys.exit(2)
    build_server(settings, mcp_settings=mcp_settings).run("stdio")


if __name__ == "__main__":
    main()

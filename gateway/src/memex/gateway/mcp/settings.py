"""Settings of the MCP server (``MEMEX_MCP_...``), parsed once in ``__main__``."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class McpSettings(BaseSettings):
    """What the MCP server lets its client do."""

    model_config = SettingsConfigDict(env_prefix="MEMEX_MCP_")

    allow_sensitive: bool = Field(
        False,
        description="Let the MCP client read items marked sensitive when a tool call asks "
        "(include_sensitive: true). Off by default: an MCP client is typically a cloud model.",
    )

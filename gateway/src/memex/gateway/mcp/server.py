"""The MCP server object: memex's tools on an `MCPServer`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from memex.gateway.mcp.backend import Stack
from memex.gateway.mcp.settings import McpSettings
from memex.gateway.mcp.tools import Tools
from memex.shared.stack_settings import StackSettings

INSTRUCTIONS = (
    "memex is the user's personal memory: their notes, people, events, inbox and beliefs. "
    "Use `ask` for a cited answer, `search` for raw passages, `query_records` for structured "
    "records, `person_timeline` for one person, `list_inbox` for open tasks, and `get_note` to "
    'read a cited note whole. Quote citations as given ("[[Note]]" or "collection:id") so the '
    "user can check them. Items marked sensitive are left out unless a call sets "
    "include_sensitive and the user has allowed it (MEMEX_MCP_ALLOW_SENSITIVE)."
)


def build_server(
    settings: StackSettings | None = None,
    progress_every_s: float = 5.0,
    mcp_settings: McpSettings | None = None,
) -> MCPServer:
    """An MCP server whose tools talk to the stack at ``settings``' addresses; a long ask
    reports progress every ``progress_every_s`` to a client that asked for it. Sensitive items
    reach the client only where ``mcp_settings`` allows them and a call asks."""
    allow = (mcp_settings or McpSettings(allow_sensitive=False)).allow_sensitive
    tools = Tools(Stack(settings or StackSettings()), progress_every_s, allow_sensitive=allow)
    server: MCPServer = MCPServer(name="memex", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    server.add_tool(tools.ask, title="Ask memex", annotations=read_only)
    server.add_tool(tools.search, title="Search memory", annotations=read_only)
    server.add_tool(tools.query_records, title="Query records", annotations=read_only)
    server.add_tool(tools.person_timeline, title="Person timeline", annotations=read_only)
    server.add_tool(tools.list_inbox, title="Inbox", annotations=read_only)
    server.add_tool(tools.get_note, title="Read a cited note", annotations=read_only)
    server.add_tool(tools.list_beliefs, title="Beliefs", annotations=read_only)
    server.add_tool(
        tools.review_belief,
        title="Confirm or reject a belief",
        annotations=ToolAnnotations(idempotent_hint=True, open_world_hint=False),
    )
    server.add_tool(
        tools.forget_belief,
        title="Forget a belief",
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False),
    )
    return server

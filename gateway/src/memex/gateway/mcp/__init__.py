"""memex's MCP server (SPEC B14): ask, search, records, timelines and the inbox as typed tools."""

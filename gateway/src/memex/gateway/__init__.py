"""memex surfaces: the HTTP/SSE gateway, the OpenAI-compatible endpoint, web chat and MCP."""

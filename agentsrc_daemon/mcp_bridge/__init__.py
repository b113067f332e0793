"""`agentsrc mcp`: an MCP server over the daemon socket (tools.py, server.py)."""

"""The read side: search, graph walks and token-budgeted context over HTTP, CLI and MCP."""

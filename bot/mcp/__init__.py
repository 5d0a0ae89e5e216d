"""`vision-agent mcp`: the agent's tools for MCP clients (Claude Desktop, Claude Code, other agents), stdio or HTTP."""

"""The HTTP servers `serve` hosts beside the Slack socket: /healthz, the REST API and MCP, on their own ports."""

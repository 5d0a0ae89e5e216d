"""Vision Agent core: agent loop, LLM client, sessions, backends, monitoring (no Slack imports here)."""

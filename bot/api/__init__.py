"""The REST API under /api (bearer token), its OpenAPI document, and the server that runs it with or without Slack."""

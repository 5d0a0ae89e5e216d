"""Search the past: each event's words (what was seen) and small picture, and the hybrid search over them."""

"""Where a conversation lives: the session key format the Slack adapter writes and the core reads back."""

from __future__ import annotations

DM_ROOT = "dm"  # the thread root of a user's top-level DM conversation


def session_key(team: str, channel: str, root: str) -> str:
    """`slack:TEAM:CHANNEL:THREAD_ROOT_TS` (root is `dm` for a user's top-level DM conversation)."""
    return f"slack:{team}:{channel}:{root}"


def place_of(key: str) -> tuple[str, str] | None:
    """(channel, thread root) of a `session_key`; None for a key that is not a Slack conversation's."""
    parts = key.split(":")
    return (parts[2], parts[3]) if len(parts) == 4 and parts[0] == "slack" and all(parts[1:]) else None

"""Tier 2: the heartbeat that looks at what tier 1 gathered (beat), its prompt (prompt) and HEARTBEAT.md's
scheduled items (checklist)."""

from bot.scheduling.heartbeat.beat import Heartbeat

__all__ = ["Heartbeat"]

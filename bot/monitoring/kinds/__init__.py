"""Tier-1 rule kinds, one class per kind in its own module; `bot.monitoring.rules` gathers them."""

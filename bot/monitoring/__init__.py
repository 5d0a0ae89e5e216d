"""Monitoring, tier 1: rules and the monitor, the alert router and its lanes, the event log, webhooks.

The heartbeat (tier 2), the scheduler and cron jobs drive the agent, so they sit above it in `bot.scheduling`.
"""

"""Scheduling, above the agent it drives: the scheduler thread, cron jobs, the heartbeat and the "when" parser.

Nothing below imports it (the agent, its services, monitoring): `.importlinter`'s scheduling-above-agent contract.
"""

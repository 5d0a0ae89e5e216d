"""Monitoring: tier-1 rules and the monitor, the alert router, the heartbeat, the scheduler and cron jobs."""

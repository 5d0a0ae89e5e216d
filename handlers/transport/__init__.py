"""Slack's wire: envelopes acked, writes retried, files fetched and uploaded, text escaped and split to Slack's limits."""

"""What the adapter keeps: threads that are sessions, per-session queues, turns in flight, the alerts it posted."""

"""Continuous video pipelines: the manager, the persisted active set, the status line, counting lines."""

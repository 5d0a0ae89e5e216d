"""The alert message: one top-level post per alert (its blocks and buttons), updated in place by its summary."""

"""What members create (pipelines, rules, watches, scheduled jobs, recipes, memory notes, zones, alert routes):
one typed model each holding its bounds, owner and audience, the one table of commands every door adapts, caps
per person and in total, and the one way member-written text reaches a prompt."""

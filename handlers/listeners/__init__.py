"""The Slack surfaces: one module per surface (messages, /vision, buttons, the DM opening), each with `register(app, bot)`."""

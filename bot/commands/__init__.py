"""The `/vision` grammar shared by Slack, the CLI and any other adapter (one module per family)."""

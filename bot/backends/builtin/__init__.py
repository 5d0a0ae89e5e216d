"""The offline detectors as Workflows blocks, one module each; bot/backends/builtin_blocks.py is the plugin entry."""

"""The CLI adapter: the `vision-agent` entry point (`bot.cli:main`), the REPL, one-shot chat, rendering."""

from bot.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

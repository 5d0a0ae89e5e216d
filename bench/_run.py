"""One benchmark in this process: `python -m bench._run NAME [--quick] [--result FILE]` (bench/__main__.py calls it).

Each bench runs in a fresh interpreter so nothing one imports (inference reads its settings at import time) or
leaves behind (threads, event loops, log handlers) can change another's numbers or break it.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import logging
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402  (after the path line: `python bench/_run.py` works too)

# Third-party loggers that narrate every request or model load; a bench prints its own figures instead.
NOISY = ("aiohttp", "aiohttp.access", "inference", "uvicorn", "uvicorn.access", "uvicorn.error", "httpx",
         "slack_bolt", "slack_sdk", "asyncio", "sentence_transformers", "transformers", "urllib3", "PIL", "mcp")


def quiet_logs() -> None:
    """Warnings and third-party INFO lines off: what a bench prints is its own table, and errors still show."""
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    for name in NOISY:
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


def run(name: str, quick: bool) -> Headline:
    module = importlib.import_module(f"bench.{name}")
    main = module.main
    result = main(quick=quick) if "quick" in inspect.signature(main).parameters else main()
    if not isinstance(result, Headline):
        raise TypeError(f"bench.{name}.main() returned {type(result).__name__}, not a bench.Headline")
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench._run")
    parser.add_argument("name")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--result", type=Path, help="write the Headline here as JSON")
    args = parser.parse_args(argv)
    quiet_logs()
    headline = run(args.name, args.quick)
    print(f"headline: {headline.figure} (goal: {headline.goal})", flush=True)
    if args.result:
        args.result.write_text(json.dumps(headline.as_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

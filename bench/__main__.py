"""Run every benchmark (`make bench`), or the ones named: `python -m bench prefix_cache recall`."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))
    failed = 0
    for name in names:
        print(f"\n== bench.{name} ==", flush=True)
        start = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main()
        except Exception as exc:  # one broken benchmark must not hide the others' numbers
            failed += 1
            print(f"bench.{name} failed: {type(exc).__name__}: {exc}")
        print(f"(bench.{name} took {time.perf_counter() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

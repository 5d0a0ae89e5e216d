"""`vision-agent serve` with a memory census, for finding what grows over a soak (SOAK_TRACE=1 or =tracemalloc).

Run as the bot's entry point (`python -m bench._soak_trace serve`): a daemon thread writes, every SOAK_TRACE_EVERY
seconds, the live objects by type (gc.get_objects; cheap enough for an hour; containers only: a str, bytes or
numpy buffer is not among them) and, with SOAK_TRACE=tracemalloc, the top allocation sites (those too) diffed against
the first snapshot. Tracing starts after the first interval (loading the detector under tracemalloc takes minutes)
and slows the process, so it is for a short diagnostic run, not the measured one. Each census goes to $SOAK_TRACE_DIR/census-N.json; `diff()` below
compares two of them by type. Nothing here is imported by the product.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any


def census() -> dict[str, int]:
    """Live gc-tracked objects by type name (containers and class instances: what Python code keeps)."""
    return dict(Counter(type(o).__qualname__ for o in gc.get_objects()).most_common(60))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _watch(out: Path, every: float, traced: bool) -> None:
    import tracemalloc

    base: Any = None
    n = 0
    while True:
        time.sleep(every)
        n += 1
        record: dict[str, Any] = {"t": time.time(), "rss_mb": _rss_mb(), "types": census()}
        if traced and tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
            if base is None:  # one interval after tracing began: what the steady state allocates from here
                base = snap
            else:
                record["grew"] = [f"{s.size_diff / 1e6:+.2f} MB {s.count_diff:+d} " + " <- ".join(
                    f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in reversed(s.traceback[-4:]))
                    for s in snap.compare_to(base, "traceback")[:25]]
            record["traced_mb"] = tracemalloc.get_traced_memory()[0] / 1e6
        elif traced:
            tracemalloc.start(8)  # after the first interval: growth after warm-up
        (out / f"census-{n:04d}.json").write_text(json.dumps(record))


def diff(a: Path, b: Path, top: int = 15) -> list[str]:
    """Types whose live count grew most from census `a` to census `b`."""
    ta, tb = json.loads(a.read_text())["types"], json.loads(b.read_text())["types"]
    grew = sorted(((tb.get(k, 0) - ta.get(k, 0), k) for k in set(ta) | set(tb)), reverse=True)
    return [f"{d:+d} {k}" for d, k in grew[:top] if d > 0]


def main() -> int:
    mode = os.environ.get("SOAK_TRACE", "")
    out = Path(os.environ.get("SOAK_TRACE_DIR", "."))
    out.mkdir(parents=True, exist_ok=True)
    every = float(os.environ.get("SOAK_TRACE_EVERY", "60"))
    threading.Thread(target=_watch, args=(out, every, mode == "tracemalloc"), daemon=True, name="soak-census").start()
    from bot.cli import main as cli

    sys.argv = ["vision-agent", *sys.argv[1:]]
    return int(cli() or 0)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "diff":
        print("\n".join(diff(Path(sys.argv[2]), Path(sys.argv[3]))))
    else:
        sys.exit(main())

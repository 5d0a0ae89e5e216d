"""Run every benchmark (`make bench`), or the ones named: `python -m bench prefix_cache recall`; `--quick` for CI.

Each bench runs in its own process (bench/_run.py), so import order or one bench's leftovers cannot break another;
their stderr (third-party chatter) is kept out of the output unless the bench fails. The run ends with a summary
table: each bench's headline figure beside its goal. Exit 1 if any bench crashed or reported no figures; a goal
not met is shown in the table, not an error (the numbers are the point of a full run). A quick run (small inputs,
seconds per bench) is what `make test` runs: it checks that every bench ran and reported figures, never timings.
"""

from __future__ import annotations

import argparse
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK_TIMEOUT = 600.0  # seconds a quick bench may take on a loaded CI machine before it counts as hung
STDERR_TAIL = 40  # lines of a failed bench's stderr shown


@dataclass
class Outcome:
    name: str
    rc: int
    seconds: float
    headline: dict | None
    stdout: str
    stderr_tail: str

    @property
    def ok(self) -> bool:
        # "Printed its figures": a headline came back and it carries at least one number.
        return self.rc == 0 and bool(self.headline) and bool(re.search(r"\d", self.headline.get("figure", "")))


def all_benches() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if not m.name.startswith("_"))


def bench_env() -> dict[str, str]:
    """The caller's environment without proxies (everything here is on 127.0.0.1), offline, third-party logs down."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HF_HUB_OFFLINE="1", LOG_LEVEL="ERROR", TQDM_DISABLE="1", PYTHONWARNINGS="ignore",
               PYTHONUNBUFFERED="1", DISABLE_VERSION_CHECK="True")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE.parent), env.get("PYTHONPATH", "")) if p)
    return env


def run_one(name: str, quick: bool, stream: bool) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        result, out_path, err_path = Path(tmp) / "result.json", Path(tmp) / "out", Path(tmp) / "err"
        cmd = [sys.executable, "-m", "bench._run", name, "--result", str(result)] + (["--quick"] if quick else [])
        start = time.perf_counter()
        with open(out_path, "w+") as out, open(err_path, "w+") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if stream else out, stderr=err, text=True,
                                    env=bench_env(), cwd=HERE.parent, stdin=subprocess.DEVNULL)
            if stream:  # one bench at a time: show its lines as they come (a full soak runs for minutes)
                assert proc.stdout is not None
                for line in proc.stdout:
                    print(line, end="", flush=True)
                    out.write(line)
            try:
                rc = proc.wait(timeout=QUICK_TIMEOUT if quick else None)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
                err.write(f"\n(killed after {QUICK_TIMEOUT:.0f} s)\n")
        seconds = time.perf_counter() - start
        headline = json.loads(result.read_text()) if result.exists() else None
        tail = "\n".join(err_path.read_text(errors="replace").splitlines()[-STDERR_TAIL:])
        return Outcome(name, rc, seconds, headline, out_path.read_text(errors="replace"), tail)


def report(o: Outcome, streamed: bool, quick: bool) -> None:
    if not streamed:
        print(f"\n== bench.{o.name} ==")
        if not quick or not o.ok:  # a quick run keeps CI's log short: its table says enough when all is well
            print(o.stdout, end="" if o.stdout.endswith("\n") else "\n")
    if not o.ok:
        why = f"exit {o.rc}" if o.rc else "no headline with figures"
        print(f"bench.{o.name} FAILED ({why}); its stderr ends:\n{textwrap.indent(o.stderr_tail or '(empty)', '  ')}")
    print(f"(bench.{o.name} took {o.seconds:.1f} s)", flush=True)


def summary(outcomes: list[Outcome], quick: bool) -> str:
    width = shutil.get_terminal_size((160, 24)).columns
    fig_w = max(30, min(90, width - 60))
    mark = {True: "met", False: "NOT met", None: "-"}
    lines = [f"{'bench':<20} {'headline':<{fig_w}} {'goal':<28} {'goal?':<8} {'s':>6}", "-" * (fig_w + 66)]
    for o in outcomes:
        h = o.headline or {}
        figure = h.get("figure") or ("CRASHED" if o.rc else "no figures")
        met = "FAILED" if not o.ok else ("(quick)" if quick and h.get("met") is not None else mark[h.get("met")])
        lines.append(f"{o.name:<20} {_fit(figure, fig_w)} {_fit(h.get('goal', ''), 28)} {met:<8} {o.seconds:6.1f}")
        for more in h.get("more") or []:  # each further goal the bench measures: its figure beside that goal
            met = "(quick)" if quick and more.get("met") is not None else mark[more.get("met")]
            lines.append(f"{_fit('  ' + more['name'], 20)} {_fit(more['figure'], fig_w)} {_fit(more['goal'], 28)} "
                         f"{met:<8}")
    return "\n".join(lines)


def _fit(text: str, width: int) -> str:
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benches to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="small inputs, seconds each: proves every bench runs")
    parser.add_argument("-j", "--jobs", type=int, default=None,
                        help="benches at once (default: 2 with --quick, else 1 so measurements do not share cores)")
    args = parser.parse_args(argv)
    names = args.names or all_benches()
    unknown = sorted(set(names) - set(all_benches()))
    if unknown:
        parser.error(f"no such bench: {', '.join(unknown)} (there are: {', '.join(all_benches())})")
    jobs = args.jobs or (2 if args.quick else 1)
    stream = jobs == 1 and not args.quick
    outcomes: list[Outcome] = []
    if stream:
        for name in names:
            print(f"\n== bench.{name} ==", flush=True)
            outcomes.append(run_one(name, args.quick, stream=True))
            report(outcomes[-1], streamed=True, quick=args.quick)
    else:
        with ThreadPoolExecutor(jobs) as pool:
            for outcome in pool.map(lambda n: run_one(n, args.quick, stream=False), names):
                report(outcome, streamed=False, quick=args.quick)
                outcomes.append(outcome)
    print(f"\n{'quick run: every bench ran on small inputs' if args.quick else 'summary'}")
    print(summary(outcomes, args.quick))
    failed = [o.name for o in outcomes if not o.ok]
    print(f"benches: {len(outcomes) - len(failed)} ran, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Benchmarks: each module's main(quick) prints ratios measured side by side in one run and returns its Headline.

`python -m bench` runs every one in a process of its own (bench/__main__.py); `--quick` runs each on small inputs in
seconds so `make test` proves none has rotted. Benchmarks are never timed tests: a quick run checks that each bench
ran and reported its figures, never how fast.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One more figure of a bench, on a row of its own under the headline: what it is (`name`, a few words), the
    figure, its goal and whether it met it (None: no pass/fail goal, or the run cannot say, e.g. a quick one)."""

    name: str
    figure: str
    goal: str
    met: bool | None = None


@dataclass(frozen=True)
class Headline:
    """A bench's one-line result for the summary table: its main figure, the goal it is held to, and whether it met
    it (None when the bench has no pass/fail goal, or when a quick run's small inputs cannot say). `more`: further
    figures that each have a goal of their own (a bench that measures several goals gives each its row)."""

    figure: str
    goal: str
    met: bool | None = None
    more: tuple[Figure, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

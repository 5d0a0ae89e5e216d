"""LLM usage and cost: per-model prices, totals per session and per day (persisted to JSON), the daily cap.

The cap holds under concurrency: a call reserves its worst-case cost before it starts (`reserve`) and settles
the actual cost after (`settle`), under one lock, so simultaneous calls cannot all pass the same check. The same
holds for each share of the day a payer's spend counts on (bot/llm/budget.py: per user, per channel, people's part).
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import date
from pathlib import Path
from typing import Any

from bot.llm.budget import TOTAL
from workspace.atomic import read_state, write_atomic

log = logging.getLogger(__name__)

# USD per million tokens (input, output). Cache writes cost 1.25x input, cache reads 0.1x input.
PRICES: list[tuple[str, tuple[float, float]]] = [
    ("claude-opus-4-5", (5.0, 25.0)),
    ("claude-opus-4", (15.0, 75.0)),
    ("claude-3-opus", (15.0, 75.0)),
    ("claude-sonnet-4", (3.0, 15.0)),
    ("claude-3-7-sonnet", (3.0, 15.0)),
    ("claude-3-5-sonnet", (3.0, 15.0)),
    ("claude-haiku-4", (1.0, 5.0)),
    ("claude-3-5-haiku", (0.8, 4.0)),
    ("claude-3-haiku", (0.25, 1.25)),
]
DEFAULT_PRICE = (3.0, 15.0)  # unknown models are priced like Sonnet so the cap still means something
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def price_for(model: str) -> tuple[float, float]:
    """(input, output) USD per million tokens for a model id (longest matching prefix wins)."""
    for prefix, price in PRICES:
        if model.startswith(prefix):
            return price
    return DEFAULT_PRICE


def cost_of(usage: dict[str, int], model: str) -> float:
    """The USD cost of one response's usage."""
    p_in, p_out = price_for(model)
    tokens_in = (
        usage.get("input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0) * CACHE_WRITE_FACTOR
        + usage.get("cache_read_input_tokens", 0) * CACHE_READ_FACTOR
    )
    return (tokens_in * p_in + usage.get("output_tokens", 0) * p_out) / 1_000_000


def _empty() -> dict[str, Any]:
    return {**{f: 0 for f in FIELDS}, "calls": 0, "cost": 0.0}


def _add(total: dict[str, Any], usage: dict[str, int], cost: float) -> None:
    for f in FIELDS:
        total[f] = total.get(f, 0) + int(usage.get(f, 0))
    total["calls"] = total.get("calls", 0) + 1
    total["cost"] = round(total.get("cost", 0.0) + cost, 9)


class UsageTracker:
    """Accumulates usage; the per-day totals live in `path` (JSON keyed by ISO date) so a restart keeps the cap."""

    def __init__(self, model: str, path: Path | None = None) -> None:
        self.model = model
        self.path = path
        self._sessions: dict[str, dict[str, Any]] = {}
        self._days: dict[str, dict[str, Any]] = self._read()
        self._lock = threading.Lock()
        self._file_lock = threading.Lock()  # one writer of the file at a time; it writes the newest figures
        self._changes = self._written = 0  # records made / the last record the file holds
        self._reserved: dict[str, float] = {}  # USD held by calls in flight, per budget line (budget.Payer.keys)

    def worst_case(self, prompt_tokens: int, max_tokens: int) -> float:
        """The most one call can cost: every prompt token written to the cache, every output token used."""
        return cost_of({"cache_creation_input_tokens": prompt_tokens, "output_tokens": max_tokens}, self.model)

    def spent(self, key: str = TOTAL) -> float:
        """Today's settled spend on one budget line (`total`, `people`, `user:U1`, `channel:C1`)."""
        day = self._days.get(date.today().isoformat(), _empty())
        return float(day["cost"] if key == TOTAL else (day.get("by") or {}).get(key, 0.0))

    def over(self, caps: dict[str, float]) -> str | None:
        """The budget line whose settled spend has reached its cap (not counting calls in flight), or None: the whole
        day's first (then it is what anyone must know), else the first in `caps`' order."""
        with self._lock:
            full = [k for k, cap in caps.items() if self.spent(k) >= cap]
            return TOTAL if TOTAL in full else next(iter(full), None)

    def reserve(self, cost: float, caps: dict[str, float] | float) -> bool:
        """Hold `cost` on each budget line for a call about to start; False (nothing held) when one line's spend plus
        what calls in flight hold on it has reached its cap (a float: the total). So each cap is overshot by at most
        the last admitted call."""
        caps = {TOTAL: caps} if isinstance(caps, int | float) else caps
        with self._lock:
            if any(self.spent(k) + self._reserved.get(k, 0.0) >= cap for k, cap in caps.items()):
                return False
            for k in caps:
                self._reserved[k] = self._reserved.get(k, 0.0) + cost
            return True

    def release(self, cost: float, keys: list[str] | None = None) -> None:
        """Give back what a call held when it failed before any usage came back."""
        with self._lock:
            self._unhold(cost, keys or [TOTAL])

    def settle(self, held: float, usage: dict[str, int], session_key: str | None = None,
               keys: list[str] | None = None, write: bool = True) -> float:
        """Swap a call's hold for its actual usage in one step (no check sees neither); returns the cost.

        `write=False`: the figures change at once, the file when the caller runs `save()` (off the event loop)."""
        with self._lock:
            self._unhold(held, keys or [TOTAL])
            cost = self._record(usage, session_key, keys or [TOTAL])
        if write:
            self.save()
        return cost

    def _unhold(self, cost: float, keys: list[str]) -> None:
        for k in keys:
            self._reserved[k] = max(0.0, self._reserved.get(k, 0.0) - cost)

    def add(self, usage: dict[str, int], session_key: str | None = None) -> float:
        """Record one response's usage; returns its cost in USD."""
        with self._lock:
            cost = self._record(usage, session_key)
        self.save()
        return cost

    def _record(self, usage: dict[str, int], session_key: str | None, keys: list[str] = [TOTAL]) -> float:  # noqa: B006
        cost = cost_of(usage, self.model)
        day = self._days.setdefault(date.today().isoformat(), _empty())
        _add(day, usage, cost)
        by = day.setdefault("by", {})
        for k in keys:
            if k != TOTAL:
                by[k] = round(by.get(k, 0.0) + cost, 9)
        if session_key is not None:
            _add(self._sessions.setdefault(session_key, _empty()), usage, cost)
        self._changes += 1
        return cost

    def today(self) -> dict[str, Any]:
        """Totals for today (tokens by kind, calls, cost)."""
        return dict(self._days.get(date.today().isoformat(), _empty()))

    def session(self, key: str) -> dict[str, Any]:
        """Totals for one session since this process started."""
        return dict(self._sessions.get(key, _empty()))

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return {}
        # A damaged file is kept aside and its last good copy used: a crash must not reset today's spend to zero.
        data = read_state(self.path, dict, log)[0] or {}
        days = {k: v for k, v in data.items() if isinstance(v, dict)}
        for day in days.values():  # an odd field (hand-edited, older file) counts as nothing spent
            if not isinstance(day.get("by"), dict):
                day["by"] = {}
            if not isinstance(day.get("cost"), int | float):
                day["cost"] = 0.0
        return days

    def save(self) -> None:
        """Write the file unless it already holds every record (blocking: write + fsync, with its .bak copy).

        50 calls settling at once each wrote it on the event loop (7.6 ms a call in a 50-thread burst, profiled); from
        threads they coalesce: a save that waited for another's finds its record written and returns."""
        with self._file_lock:
            with self._lock:
                if self._written == self._changes:
                    return
                changes, text = self._changes, self._text()
            if self.path is not None:
                write_atomic(self.path, text, keep_copy=True)
            with self._lock:
                self._written = max(self._written, changes)

    def _text(self) -> str:
        recent = dict(sorted(self._days.items())[-62:])  # two months of history is plenty
        return json.dumps(recent, indent=1)

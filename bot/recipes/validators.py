"""When a recipe stops being trusted: a step failing again and again, a high failure rate, old age (DEFAULT_VALIDATORS)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol


class Validator(Protocol):
    def why_invalid(self, recipe: dict[str, Any], now: datetime) -> str | None:
        """One line saying why the recipe should not be replayed, or None."""


@dataclass(frozen=True)
class StepFailures:
    """One step failing `limit` times: the setup it replays is gone (a camera moved, a model removed)."""

    limit: int = 3

    def why_invalid(self, recipe: dict[str, Any], now: datetime) -> str | None:
        for step, count in sorted((recipe["metadata"].get("step_failures") or {}).items()):
            if int(count) >= self.limit:
                return f"step {int(step) + 1} failed {count} times"
        return None


@dataclass(frozen=True)
class FailureRate:
    """More than `rate` of the replays failing, once there are `min_runs` of them."""

    rate: float = 0.5
    min_runs: int = 4

    def why_invalid(self, recipe: dict[str, Any], now: datetime) -> str | None:
        meta = recipe["metadata"]
        failures = int(meta.get("failures") or 0)
        runs = failures + int(meta.get("successes") or 0)
        if runs >= self.min_runs and failures / runs > self.rate:
            return f"{failures} of {runs} replays failed"
        return None


@dataclass(frozen=True)
class Stale:
    """Not run successfully for `days` (cameras and models change; an old recipe is not trusted blindly)."""

    days: int = 90

    def why_invalid(self, recipe: dict[str, Any], now: datetime) -> str | None:
        meta = recipe["metadata"]
        since = meta.get("last_success") or meta.get("created_at")
        try:
            when = datetime.fromisoformat(since)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None and now.tzinfo is not None:
            when = when.replace(tzinfo=now.tzinfo)
        if now - when > timedelta(days=self.days):
            return f"not run successfully for over {self.days} days"
        return None


DEFAULT_VALIDATORS: tuple[Validator, ...] = (StepFailures(), FailureRate(), Stale())


def why_invalid(recipe: dict[str, Any], now: datetime,
                validators: tuple[Validator, ...] = DEFAULT_VALIDATORS) -> str | None:
    """The first validator's reason, or None: the recipe may be replayed."""
    for validator in validators:
        if reason := validator.why_invalid(recipe, now):
            return reason
    return None

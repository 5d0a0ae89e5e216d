"""The one reader of schedule phrases: 'at 18:00', 'daily at 6:30', 'every 15 minutes', 'every 2h', 'every hour'.

Used by scheduled jobs (bot/objects/job.py `JobSpec`, every door) and by HEARTBEAT.md's item tags ('[every 2h]',
'[at 18:00]': `TAG`), so they accept the same phrases and check them the same way, bounds included.
"""

from __future__ import annotations

import re
from typing import Any

PHRASE = (
    r"(?:(?:daily\s+(?:at\s+)?|at\s+)(?P<at>\d{1,2}:\d{2})"
    r"|every\s+(?P<n>\d+(?:\.\d+)?)?\s*(?P<unit>minutes?|mins?|m|hours?|hrs?|h|days?|d))"
)
_WHEN = re.compile(rf"^\s*{PHRASE}\s*$", re.I)
TAG = re.compile(rf"\[\s*{PHRASE}\s*\]", re.I)  # a HEARTBEAT.md item's tag
EXAMPLE = "'at 18:00' or 'every 30 minutes' or 'every hour'"
MIN_MINUTES, MAX_MINUTES = 1.0, 7 * 1440.0  # a job more often than a minute floods its channel; beyond a week: at HH:MM
INTERVAL_RULE = f"at most every {MIN_MINUTES:g} minute and at least every {MAX_MINUTES / 1440:g} days"


def parse_when(text: str) -> dict[str, Any]:
    """A phrase -> {'at': 'HH:MM'} or {'every_minutes': N}; ValueError with what to write instead."""
    m = _WHEN.match(text)
    if not m:
        raise ValueError(f"cannot read the schedule {text!r}; say {EXAMPLE}")
    return from_match(m)


def from_match(m: re.Match[str]) -> dict[str, Any]:
    """The fields of a matched PHRASE (from `_WHEN` or `TAG`); ValueError for an impossible time or interval."""
    if m.group("at"):
        hh, mm = (int(x) for x in m.group("at").split(":"))
        if hh > 23 or mm > 59:
            raise ValueError(f"{m.group('at')} is not a time of day; use HH:MM between 00:00 and 23:59")
        return {"at": f"{hh:02d}:{mm:02d}"}
    n, unit = float(m.group("n") or 1), m.group("unit").lower()
    minutes = n * (1440 if unit.startswith("d") else 60 if unit.startswith("h") else 1)
    return {"every_minutes": check_interval(minutes)}


def check_interval(minutes: float) -> float:
    """An interval in minutes within the bounds (ValueError in one line): never so small it floods a channel, never
    so large the scheduler's date arithmetic overflows."""
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:  # also refuses nan and inf
        raise ValueError(f"a job repeats {INTERVAL_RULE}, not every {minutes:g} minutes; for once a day or less "
                         "often use 'at HH:MM'")
    return minutes

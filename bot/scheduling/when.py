"""The one reader of schedule phrases: 'at 18:00', 'daily at 6:30', 'every 15 minutes', 'every 2h', 'every hour'.

Used by `/vision schedule` and the scheduler's cron jobs (`parse_when`) and by HEARTBEAT.md's item tags
('[every 2h]', '[at 18:00]': `TAG`), so the two accept the same phrases and check them the same way.
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
    if minutes <= 0:
        raise ValueError("the interval must be more than zero minutes")
    return {"every_minutes": minutes}

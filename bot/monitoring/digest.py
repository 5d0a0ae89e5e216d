"""What happened while you were away: a digest of the event log since a time, in numbers (never the model's memory).

`build` reads events (`EventLog.query`; `digest_log.from_log` fetches them) and the false-alarm marks and returns a `Digest`: per camera the alerts posted
and held, false alarms, line crossings in/out and health events; the alerts themselves with their frame and clip
links; counts per time bucket for a chart. Adapters render it: Slack as table + chart blocks with a text fallback
(`handlers/alerts/digest_blocks.py`), the terminal and the agent as the plain text of `bot/monitoring/digest_text.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.monitoring.events_log import CHECKED

# Posts that report rather than detect: a digest never counts them (nor itself).
REPORTS = frozenset({"daily_summary", "snapshot", "heartbeat_cap", "digest", CHECKED})  # not alerts themselves
MAX_ALERTS = 10  # listed with their links; the rest are counted
MAX_SERIES = 6  # docs.slack.dev data visualization block: 1-6 series
BUCKET_SECONDS = (300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MAX_BUCKETS = 12


@dataclass(frozen=True)
class CameraRow:
    """One camera's numbers over the digest's window."""

    camera: str
    posted: int = 0
    held: int = 0
    false_alarms: int = 0
    crossed_in: int = 0
    crossed_out: int = 0
    health: int = 0


@dataclass(frozen=True)
class AlertLine:
    """One alert of the window, with where its evidence is (None: not kept)."""

    alert_id: str
    time: float
    camera: str
    rule: str
    text: str
    held: str | None
    false_alarm: bool
    frame_url: str | None
    clip: str | None  # clip URL (REST API on) or clip id


@dataclass(frozen=True)
class Digest:
    """The window [start, end) in numbers; `series` are counts per bucket starting at `bucket_starts`."""

    start: float
    end: float
    since_label: str
    rows: tuple[CameraRow, ...]
    alerts: tuple[AlertLine, ...]
    more_alerts: int
    bucket_starts: tuple[float, ...]
    bucket_seconds: int
    series: tuple[tuple[str, tuple[int, ...]], ...]

    @property
    def empty(self) -> bool:
        return not self.rows


def crossing_moves(events: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int, int]]:
    """(event, in, out) for each line_crossed event: what its counter totals grew since the previous event of its
    pipeline (the first counts from 0; a total that went down is a restarted counter), so held events count too.
    Feed every event (not only the window's): the totals before the window are the baseline."""
    prev: dict[str, tuple[float, float]] = {}
    for e in events:
        counts = e.get("counts") or {}
        if e.get("event_type") != "line_crossed" or not isinstance(counts, dict):
            continue
        now = (_num(counts.get("count_in")), _num(counts.get("count_out")))
        key = str(e.get("pipeline_id") or e.get("camera"))
        before = prev.get(key, (0.0, 0.0))
        prev[key] = now
        moved_in, moved_out = (int(now[i] - before[i] if now[i] >= before[i] else now[i]) for i in (0, 1))
        yield e, moved_in, moved_out


def build(events: list[dict[str, Any]], start: float, end: float, since_label: str, *,
          false_alarm_ids: Iterable[str] = (), api_base: str | None = None) -> Digest:
    """The digest of `events` (all of the log, oldest first) in [start, end)."""
    marked = set(false_alarm_ids)
    window = [e for e in events if start <= _num(e.get("time")) < end and e.get("rule") not in REPORTS]
    rows: dict[str, dict[str, int]] = {}
    for e in window:
        row = rows.setdefault(str(e.get("camera")), {})
        kind = "health" if e.get("event_type") == "health" else "held" if e.get("held") else "posted"
        row[kind] = row.get(kind, 0) + 1
        if e.get("alert_id") in marked:
            row["false_alarms"] = row.get("false_alarms", 0) + 1
    step = _bucket_seconds(end - start)
    starts = tuple(float(start + i * step) for i in range(max(1, -(-int(end - start) // step))))
    per: dict[str, list[int]] = {}
    for e, moved_in, moved_out in crossing_moves(events):
        t = _num(e.get("time"))
        if not start <= t < end:
            continue
        row = rows.setdefault(str(e.get("camera")), {})
        row["crossed_in"] = row.get("crossed_in", 0) + moved_in
        row["crossed_out"] = row.get("crossed_out", 0) + moved_out
        for name, n in ((f"{e.get('camera')} in", moved_in), (f"{e.get('camera')} out", moved_out)):
            per.setdefault(name, [0] * len(starts))[min(int((t - start) // step), len(starts) - 1)] += n
    if not per:  # no line on any camera: events per camera over time
        for e in window:
            counts = per.setdefault(str(e.get("camera")), [0] * len(starts))
            counts[min(int((_num(e.get("time")) - start) // step), len(starts) - 1)] += 1
    alerts = [_alert_line(e, marked, api_base) for e in window if e.get("event_type") != "health"]
    return Digest(
        start, end, since_label, tuple(CameraRow(cam, **n) for cam, n in sorted(rows.items())),
        tuple(alerts[-MAX_ALERTS:]), max(0, len(alerts) - MAX_ALERTS), starts, step,
        tuple((name, tuple(v)) for name, v in sorted(per.items(), key=lambda kv: -sum(kv[1]))[:MAX_SERIES]),
    )


def _alert_line(e: dict[str, Any], marked: set[str], api_base: str | None) -> AlertLine:
    alert_id = str(e.get("alert_id") or "")
    held = str(e["held"]) if e.get("held") else None
    frame = (f"{api_base}/api/alerts/{alert_id}/frame" if api_base and alert_id and e.get("has_frame") and not held
             else None)
    clip_path = e.get("clip_path")
    clip = None
    if isinstance(clip_path, str) and clip_path:
        stem = Path(clip_path).stem
        clip = f"{api_base}/api/clips/{stem}" if api_base else f"clip {stem}"
    return AlertLine(alert_id, _num(e.get("time")), str(e.get("camera")), str(e.get("rule") or e.get("event_type")),
                     str(e.get("text") or ""), held, alert_id in marked, frame, clip)


def _bucket_seconds(span: float) -> int:
    """The smallest round bucket that cuts the window into at most MAX_BUCKETS pieces."""
    return next((b for b in BUCKET_SECONDS if span / b <= MAX_BUCKETS), int(-(-span // MAX_BUCKETS)) or 1)


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

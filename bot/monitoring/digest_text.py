"""A digest as words: its table's rows, time labels, a text sparkline and the plain text every surface can show."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.monitoring.digest import AlertLine, Digest

HEADER = ("Camera", "Alerts", "Held", "False alarms", "In", "Out", "Health")
_BARS = "▁▂▃▄▅▆▇█"


def table_rows(d: Digest) -> list[list[str]]:
    """The header and one row per camera (the Slack table block and the terminal show the same cells)."""
    rows = [list(HEADER)]
    for r in d.rows:
        rows.append([r.camera, *(str(n) for n in (r.posted, r.held, r.false_alarms, r.crossed_in, r.crossed_out,
                                                   r.health))])
    return rows


def clock(t: float, tz: str, with_day: bool = False) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(tz)).strftime("%a %d %b %H:%M" if with_day else "%H:%M")


def same_day(a: float, b: float, tz: str) -> bool:
    """Whether two times fall on one calendar day in `tz` (a label without a date is only clear then)."""
    return datetime.fromtimestamp(a, ZoneInfo(tz)).date() == datetime.fromtimestamp(b, ZoneInfo(tz)).date()


def bucket_labels(d: Digest, tz: str) -> list[str]:
    """'09:00' per bucket ('Wed 18:00' when the window crosses midnight, 'Mon 25' for day buckets): ascending as
    read, unique, at most 20 characters (a chart category's limit)."""
    crosses = not same_day(d.start, d.end, tz)
    fmt = "%a %d" if d.bucket_seconds >= 86400 else "%a %H:%M" if crosses else "%H:%M"
    return [datetime.fromtimestamp(t, ZoneInfo(tz)).strftime(fmt) for t in d.bucket_starts]


def width(text: str) -> int:
    """Columns `text` takes in a terminal: East Asian wide and fullwidth characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, columns: int, left: bool = True) -> str:
    """`text` padded with spaces to `columns` terminal columns (str.ljust counts characters, not columns)."""
    fill = " " * max(0, columns - width(text))
    return text + fill if left else fill + text


def sparkline(values: tuple[int, ...] | list[int]) -> str:
    """▁▃█ bars scaled to the largest value (all ▁ when nothing happened)."""
    top = max(values, default=0)
    return "".join(_BARS[0] if top == 0 else _BARS[round(v / top * (len(_BARS) - 1))] for v in values)


def title(d: Digest, tz: str) -> str:
    """'What happened since you last wrote here (Thu 26 Nov 09:12 – 11:40 UTC)'; without a note, the times only."""
    span = f"{clock(d.start, tz, True)} – {clock(d.end, tz, not same_day(d.start, d.end, tz))} {tz}"
    return f"What happened {d.since_label} ({span})" if d.since_label else f"What happened {span}"


def alert_text(a: AlertLine, tz: str, with_day: bool = False) -> str:
    """'09:14 door line_crossed: 2 people crossed — frame URL · clip URL [held: cooldown] [false alarm]' (the date
    first when the window crosses midnight)."""
    links = " · ".join(x for x in (f"frame {a.frame_url}" if a.frame_url else "", a.clip or "") if x)
    marks = (f" [not posted: {a.held}]" if a.held else "") + (" [false alarm]" if a.false_alarm else "")
    return f"{clock(a.time, tz, with_day)} {a.camera} {a.rule}: {a.text}" + (f" — {links}" if links else "") + marks


def digest_text(d: Digest, tz: str) -> str:
    """The whole digest as plain text: the Slack fallback, the terminal's output and the agent's tool result."""
    if d.empty:
        return f"{title(d, tz)}: nothing happened — no alerts, crossings or health events."
    rows = table_rows(d)
    widths = [max(width(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [title(d, tz) + ":", ""]
    lines += ["  ".join(pad(c, w, left=i == 0) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
              for r in rows]
    if d.series and len(d.bucket_starts) > 1:
        labels = bucket_labels(d, tz)
        lines += ["", f"Over time ({labels[0]} → {labels[-1]}, one bar per {_span(d.bucket_seconds)}):"]
        names = max(width(name) for name, _ in d.series)
        lines += [f"  {pad(name, names)}  {sparkline(v)}  {sum(v)}" for name, v in d.series]
    if d.alerts:
        lines += ["", "Alerts" + (f" (latest {len(d.alerts)}; {d.more_alerts} earlier)" if d.more_alerts else "") + ":"]
        dated = not same_day(d.start, d.end, tz)
        lines += [f"- {alert_text(a, tz, dated)}" for a in d.alerts]
    return "\n".join(lines)


def _span(seconds: int) -> str:
    if seconds % 86400 == 0:
        return f"{seconds // 86400} d" if seconds > 86400 else "day"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h" if seconds > 3600 else "hour"
    return f"{seconds // 60} min"

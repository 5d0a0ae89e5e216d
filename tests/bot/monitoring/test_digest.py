"""A digest's numbers are the event log's: alerts posted and held, false alarms, crossings, health, over time."""

from __future__ import annotations

import re
import time
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config import Settings, load_settings
from bot.monitoring.alert_frames import AlertFrames
from bot.monitoring.alerts import Alert, AlertRouter
from bot.monitoring.digest import build
from bot.monitoring.digest_log import from_log
from bot.monitoring.digest_text import bucket_labels, digest_text, sparkline, table_rows
from bot.monitoring.events_log import CHECKED, EventLog
from bot.monitoring.false_alarms import FalseAlarm, FalseAlarms

TZ = "UTC"
JPEG = b"\xff\xd8\xff\xe0fake-jpeg"


@pytest.fixture
def rig(tmp_path: Path, base_env: dict[str, str]) -> tuple[Settings, AlertRouter, EventLog]:
    settings = load_settings(base_env, heartbeat={"timezone": TZ}, api={"public_url": "https://vision.example"})
    events = EventLog(tmp_path / "events.jsonl")
    router = AlertRouter(tmp_path / "alerts.json", events=events, cooldown_seconds=300,
                         frames=AlertFrames(tmp_path / "frames"))
    return settings, router, events


def crossing(router: AlertRouter, t: float, cin: int, cout: int, pid: str = "p1") -> Alert:
    return Alert("door", "line_crossed", f"line crossed (totals in {cin} / out {cout})",
                 {"person": 1, "count_in": cin, "count_out": cout}, t, JPEG, pid)


async def test_the_digest_counts_what_the_event_log_holds(rig) -> None:
    settings, router, events = rig
    now = time.time()
    start = now - 2 * 3600
    router.record(crossing(router, start - 600, 4, 2))  # before the window: the baseline, not news
    first = crossing(router, start + 600, 7, 2)
    assert await router.dispatch(first) is None  # posted, frame kept
    assert await router.dispatch(crossing(router, start + 660, 9, 3)) == "cooldown"  # held, still crossings
    yard = Alert("yard", "class_appears:person", "a person appeared", {"person": 1}, start + 3000, JPEG,
                 clip_path="/ws/clips/yard-123.mp4")
    assert await router.dispatch(yard) is None
    router.record(Alert("yard", "stalled", "no frames from yard for 40s", time=start + 4000))
    router.record(Alert("*", "daily_summary", "Daily summary", time=start + 5000))  # a report, not an event
    events.append({"camera": "yard", "rule": CHECKED, "event_type": CHECKED, "about": [yard.alert_id],  # verify=on:
                   "text": "✓ seen: a person", "time": start + 3010})  # the model's look, words about the alert
    FalseAlarms(router, None, None, settings).mark(
        FalseAlarm("yard", yard.rule, yard.text, {}, yard.time, "U1", yard.alert_id))

    d = from_log(events, router, settings, start, now, "since two hours ago")

    rows = {r.camera: r for r in d.rows}
    assert set(rows) == {"door", "yard"}  # the summary is not counted
    logged = [e for e in events.query(since=start, limit=1000) if e["rule"] not in ("daily_summary", CHECKED)]
    assert rows["door"].posted + rows["door"].held + rows["yard"].posted + rows["yard"].health == len(logged)
    assert (rows["door"].posted, rows["door"].held, rows["door"].crossed_in, rows["door"].crossed_out) == (1, 1, 5, 1)
    assert (rows["yard"].posted, rows["yard"].false_alarms, rows["yard"].health) == (1, 1, 1)
    by_id = {a.alert_id: a for a in d.alerts}
    assert by_id[first.alert_id].frame_url == f"https://vision.example/api/alerts/{first.alert_id}/frame"
    assert by_id[yard.alert_id].false_alarm and by_id[yard.alert_id].clip == "https://vision.example/api/clips/yard-123"
    held = next(a for a in d.alerts if a.held)
    assert held.held == "cooldown" and held.frame_url is None  # a held event's frame was never kept
    # over time: the crossings land in the bucket they happened in, and add up to the totals
    series = dict(d.series)
    assert sum(series["door in"]) == 5 and sum(series["door out"]) == 1
    assert series["door in"][int((first.time - start) // d.bucket_seconds)] == 5


async def test_the_text_has_the_table_sparklines_and_marks(rig) -> None:
    settings, router, events = rig
    now = time.time()
    start = now - 3600
    for i in range(4):
        router.record(crossing(router, start + 60 + i * 900, 2 * (i + 1), i))
    d = from_log(events, router, settings, start, now, "since an hour ago")
    text = digest_text(d, TZ)
    assert table_rows(d)[1][:1] == ["door"] and "What happened since an hour ago" in text
    assert "door in" in text and sparkline(dict(d.series)["door in"]) in text
    assert "[not posted" not in text and "door line_crossed: line crossed (totals in 8 / out 3)" in text


def test_a_quiet_window_says_nothing_happened(rig) -> None:
    settings, router, events = rig
    d = from_log(events, router, settings, time.time() - 60, time.time(), "since a minute ago")
    assert d.empty and "nothing happened" in digest_text(d, TZ)


def test_sparkline_scales_to_the_largest_value() -> None:
    assert sparkline([0, 0]) == "▁▁" and sparkline([0, 4, 8]) == "▁▅█"


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC).timestamp()


def events_at(camera: str, *times: float) -> list[dict[str, object]]:
    return [{"camera": camera, "rule": "class_appears:person", "event_type": "class_appears", "text": "a person",
             "time": t} for t in times]


def test_a_window_across_midnight_dates_both_ends_and_its_chart() -> None:
    start, end = at(25, 17, 29), at(26, 17, 29)  # Wed to Thu: 24 h, one bar per 2 h
    d = build(events_at("door", start + 60, end - 60), start, end, "")
    text = digest_text(d, TZ)
    assert text.startswith("What happened Wed 25 Nov 17:29 – Thu 26 Nov 17:29 UTC:")
    assert "Over time (Wed 17:29 → Thu 15:29, one bar per 2 h):" in text
    assert "- Wed 25 Nov 17:30 door" in text and "- Thu 26 Nov 17:28 door" in text  # which 17:28 it was
    labels = bucket_labels(d, TZ)
    assert labels[0] == "Wed 17:29" and labels[-1] == "Thu 15:29" and len(set(labels)) == len(labels)
    # within one day the end keeps to the time and the bars to the clock
    same = build(events_at("door", at(26, 9, 30), at(26, 11, 0)), at(26, 9, 12), at(26, 11, 40), "")
    same_text = digest_text(same, TZ)
    assert "What happened Thu 26 Nov 09:12 – 11:40 UTC" in same_text and "- 09:30 door" in same_text
    assert bucket_labels(same, TZ)[0] == "09:12"


def right_edges(line: str) -> list[int]:
    """The terminal column each word of `line` ends at (wide characters take two)."""
    def columns(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return [columns(line[:m.end()]) for m in re.finditer(r"\S+", line)]


def test_the_table_lines_up_with_wide_camera_names() -> None:
    start, end = at(26, 9), at(26, 11)
    d = build(events_at("北門カメラ", start + 60) + events_at("door", start + 120, start + 180), start, end, "")
    table = [line for line in digest_text(d, TZ).splitlines()
             if line.startswith(("Camera", "door", "北門カメラ"))]
    assert len(table) == 3
    # the Alerts column and the last three (In, Out, Health) end at the same terminal column on every line
    assert len({(e[1], *e[-3:]) for e in map(right_edges, table)}) == 1

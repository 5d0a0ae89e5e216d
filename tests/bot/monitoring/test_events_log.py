"""The event log: append/query, since/camera/type filters, ids across restarts, bounded size, threads, alerts recorded."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from bot.config import Settings
from bot.media.redaction import redact
from bot.monitoring.events_log import EventLog, event_type_of
from bot.monitoring.monitor import Monitor
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result


def test_query_filters_by_since_camera_and_type_newest_last(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    for i, cam in enumerate(["door", "yard", "door", "door"]):
        log.append({"event_type": "line_crossed" if i % 2 == 0 else "alert", "camera": cam, "time": 100.0 + i})

    assert [e["time"] for e in log.query()] == [100.0, 101.0, 102.0, 103.0]
    assert [e["time"] for e in log.query(since=102.0)] == [102.0, 103.0]
    assert [e["time"] for e in log.query(camera="door")] == [100.0, 102.0, 103.0]
    assert [e["time"] for e in log.query(camera="door", event_type="line_crossed")] == [100.0, 102.0]
    assert [e["time"] for e in log.query(limit=2)] == [102.0, 103.0]
    assert all(e["source"] == "vision-agent" for e in log.query())


def test_ids_are_monotonic_and_continue_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first = [EventLog(path).append({"text": "a"})["id"]]
    log = EventLog(path)
    first += [log.append({"text": t})["id"] for t in "bc"]
    assert first == sorted(first) and len(set(first)) == 3
    assert int(first[-1]) == 3


def test_frames_never_stored_and_secrets_redacted(tmp_path: Path) -> None:
    from bot.media.redaction import add_secrets

    add_secrets(["sk-ant-eventlog-secret-123456"])
    log = EventLog(tmp_path / "events.jsonl", redact=redact)
    log.append({"camera": "door", "frame": b"\xff\xd8jpeg", "text": "key sk-ant-eventlog-secret-123456 leaked"})
    raw = (tmp_path / "events.jsonl").read_text()
    assert "jpeg" not in raw and "sk-ant-eventlog-secret-123456" not in raw
    (ev,) = log.query()
    assert ev["has_frame"] is True and "frame" not in ev


def test_size_stays_bounded_and_newest_events_survive(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=10_000)
    for i in range(2000):
        log.append({"camera": "door", "text": f"event {i}", "time": float(i)})
    assert path.stat().st_size <= 10_000
    kept = log.query(limit=10_000)
    assert kept[-1]["text"] == "event 1999" and 10 < len(kept) < 2000
    assert [e["time"] for e in kept] == sorted(e["time"] for e in kept)  # a contiguous newest tail


def test_appends_from_many_threads_lose_nothing_and_tear_no_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)

    def work(n: int) -> None:
        for i in range(200):
            log.append({"camera": f"cam{n}", "text": "x" * 50, "i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 1600
    ids = [json.loads(line)["id"] for line in lines]  # every line parses
    assert len(set(ids)) == 1600 and ids == sorted(ids)


def test_event_type_from_rule_ids() -> None:
    assert event_type_of("line_crossed") == "line_crossed"
    assert event_type_of("count_over:person>3") == "count_over"
    assert event_type_of("time_in_zone>30s") == "time_in_zone"
    assert event_type_of("class_appears:*") == "class_appears"
    assert event_type_of("near:person+car<=0.5") == "near"
    assert event_type_of("then:person@cam1<=60s") == "then"
    assert event_type_of("stalled") == "health"
    assert event_type_of("daily_summary") == "alert"


async def test_monitor_alerts_sent_muted_and_cooling_down_are_all_recorded(tmp_path: Path, settings: Settings) -> None:
    clock = Clock()
    events = EventLog(tmp_path / "events.jsonl")
    router, sink = make_router(tmp_path, clock, cooldown=60, events=events)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, clock=clock)
    monitor.start()
    pipes.add("door")
    pipes.push("door", result(count_in=0))
    pipes.push("door", result(count_in=1))  # sent
    clock.advance(5)
    pipes.push("door", result(count_in=2))  # inside the cooldown: held
    await monitor.flush()
    router.mute("door", 3600)
    clock.advance(100)
    pipes.push("door", result(count_in=3))  # muted
    await monitor.flush()

    got = events.query(camera="door")
    assert [(e["event_type"], e["counts"]["count_in"], e.get("held")) for e in got] == [
        ("line_crossed", 1, None), ("line_crossed", 2, "cooldown"), ("line_crossed", 3, "muted")]
    assert len(sink.alerts) == 1 and got[0]["pipeline_id"] == "p_door"

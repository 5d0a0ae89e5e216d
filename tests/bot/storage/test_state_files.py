"""Every JSON state file survives kill -9 and damage from outside: the heartbeat's state, LLM usage, the pipelines to
restore, trajectories, the event log (ids unique across restarts, odd lines never break its readers)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.llm.usage import UsageTracker
from bot.monitoring.events_log import EventLog
from bot.pipelines.state import PipelineConfig, load_state, save_state
from bot.recipes.trajectories import TrajectoryLog
from tests.bot.cli.test_cli import ROOT
from tests.fakes.waits import patience
from workspace.atomic import DAMAGED, load_json

# The state writers the bot runs, each as fast as it can, in one loop: killed anywhere, every file must load.
WRITER = """
import sys, time
from pathlib import Path
from bot.llm.usage import UsageTracker
from bot.pipelines.state import PipelineConfig, save_state
from bot.recipes.trajectories import TrajectoryLog
from bot.monitoring.events_log import EventLog
from workspace.atomic import write_atomic
import json
root = Path(sys.argv[1])
usage = UsageTracker("claude-sonnet-4-5", root / "usage.json")
traj = TrajectoryLog(root / "trajectories")
events = EventLog(root / "events.jsonl", max_bytes=20_000)
print("ready", flush=True)
i = 0
while True:
    i += 1
    usage.add({"input_tokens": 100 + i, "output_tokens": i % 50})
    save_state(root / "active_state.json", [PipelineConfig(f"p{j}", f"cam{j}", f"rtsp://10.0.0.{j}/s", "builtin/people",
                                                           parameters={"pad": "x" * (i % 400)}) for j in range(i % 9)])
    write_atomic(root / "heartbeat.json", json.dumps({"calls": i, "notes": "y" * (i % 500)}), keep_copy=True)
    traj.record("slack:T:C:1.0", "U1", "C", [{"tool": "start_pipeline", "input": {"n": i}}], "ok " * (i % 90))
    events.append({"camera": "door", "rule": "line_crossed", "text": "z" * (i % 200), "counts": {"count_in": i}})
    (root / "writes").write_text(str(i))
"""


def _writes(root: Path) -> int:
    try:
        return int((root / "writes").read_text() or 0)
    except (OSError, ValueError):
        return 0


def test_ten_kill_9s_amid_writes_leave_every_state_file_loadable(tmp_path: Path) -> None:
    seen_ids: list[int] = []
    for attempt in range(10):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                                cwd=ROOT)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            start, deadline = _writes(tmp_path), time.monotonic() + patience(30)
            while time.monotonic() < deadline and _writes(tmp_path) < start + 20 + attempt * 7:
                time.sleep(0.005)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=patience(30))
        for name in ("usage.json", "active_state.json", "heartbeat.json"):
            assert load_json(tmp_path / name) not in (None, DAMAGED), f"kill {attempt + 1} broke {name}"
        assert UsageTracker("claude-sonnet-4-5", tmp_path / "usage.json").today()["calls"] > 0
        assert all(c.video_reference.startswith("rtsp://") for c in load_state(tmp_path / "active_state.json"))
        assert TrajectoryLog(tmp_path / "trajectories").last("slack:T:C:1.0") is not None
        log = EventLog(tmp_path / "events.jsonl", max_bytes=20_000)
        seen_ids.append(int(log.append({"camera": "door", "rule": "probe", "text": "after a kill"})["id"]))
        assert not list(tmp_path.glob("*.corrupt-*")), f"kill {attempt + 1} left a damaged file"
    assert seen_ids == sorted(set(seen_ids))  # every restart's ids go on from the highest, never repeat


@pytest.mark.parametrize("name, reader", [
    ("usage.json", lambda p: UsageTracker("claude-sonnet-4-5", p).today()["calls"]),
    ("active_state.json", lambda p: [c.name for c in load_state(p)]),
])
def test_a_damaged_state_file_is_named_kept_aside_and_the_last_good_copy_goes_on(tmp_path, caplog, name, reader):
    path = tmp_path / name
    if name == "usage.json":
        usage = UsageTracker("claude-sonnet-4-5", path)
        usage.add({"input_tokens": 10})
        usage.add({"input_tokens": 10})  # .bak holds this save too
        good = 2
    else:
        save_state(path, [PipelineConfig("p1", "dock", "rtsp://10.0.0.5/s")])
        save_state(path, [PipelineConfig("p1", "dock", "rtsp://10.0.0.5/s"), PipelineConfig("p2", "gate", "0")])
        good = ["dock", "gate"]  # the last save, not the one before it
    path.write_text(path.read_text()[:25])  # cut short, as a full disk or a bad copy leaves it
    with caplog.at_level(logging.ERROR):
        assert reader(path) == good  # the last good copy, not nothing
    [kept] = tmp_path.glob(f"{name}.corrupt-*")
    assert f"{name} was damaged" in caplog.text and kept.name in caplog.text
    assert load_json(path) not in (None, DAMAGED)  # written back: the next start-up is clean


def test_a_day_of_spend_is_not_lost_to_garbage_fields(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"2020-01-01": {"cost": "lots", "by": [1, 2]}, "x": 3}))
    usage = UsageTracker("claude-sonnet-4-5", path)
    usage.add({"input_tokens": 1000})
    assert usage.spent() > 0 and json.loads(path.read_text())["2020-01-01"]["by"] == {}


ODD_LINES = [
    '{"id": "000000000007", "time": 1700000000.0, "camera": "do',  # torn by a crash
    "garbage \x00\xff not json",
    "[1, 2, 3]",
    '"just a string"',
    '{"id": "000000000009", "time": "yesterday", "camera": "door"}',
    '{"id": ["x"], "time": 1700000001.0}',
    '{"id": "000000000010", "time": 1700000002.0, "camera": 42, "text": {"a": 1}, "counts": [1], "rule": null}',
    '{"id": 999999, "time": NaN}',
    '{"id": "000000000003", "time": 1700000003.0, "camera": "yard", "text": "an id out of order last"}',
]


@pytest.mark.parametrize("odd", range(len(ODD_LINES)))
def test_one_odd_last_line_never_breaks_the_readers_or_repeats_an_id(tmp_path: Path, odd: int) -> None:
    path = tmp_path / "events.jsonl"
    first = EventLog(path)
    ids = [first.append({"camera": "door", "rule": "line_crossed", "text": f"e{i}"})["id"] for i in range(3)]
    with path.open("a", encoding="utf-8") as f:
        f.write(ODD_LINES[odd])  # no newline, as a crash leaves it
    again = EventLog(path)
    new = again.append({"camera": "door", "rule": "line_crossed", "text": "after the restart"})
    assert new["id"] not in ids and int(new["id"]) > max(int(i) for i in ids)
    events = again.query(since=0, limit=100)
    assert [e["text"] for e in events if e.get("camera") == "door"][-1] == "after the restart"
    assert all(isinstance(e["time"], float) and isinstance(e["id"], str) for e in events)
    assert all(isinstance(e.get("camera"), str | None) and isinstance(e.get("counts", {}), dict) for e in events)
    json.dumps(events, allow_nan=False)  # what /api/events and MCP send stays valid JSON
    again.query(since=0, camera="door", event_type="line_crossed")


@pytest.mark.parametrize("damage", ['{"pipelines": 5}', '{"pipelines": {"p1": {}}}', '{"pipelines": null, "version": 1}'])
def test_active_state_of_the_wrong_shape_goes_on_from_the_last_good_copy(tmp_path: Path, damage: str) -> None:
    """A number where the list of pipelines should be raised at start-up (restore failed with it)."""
    path = tmp_path / "active_state.json"
    save_state(path, [PipelineConfig("p1", "dock", "rtsp://10.0.0.5/s")])
    save_state(path, [PipelineConfig("p1", "dock", "rtsp://10.0.0.5/s"), PipelineConfig("p2", "gate", "0")])
    path.write_text(damage)
    assert [c.name for c in load_state(path)] == ["dock", "gate"]  # the last save
    assert list(tmp_path.glob("active_state.json.corrupt-*"))


def test_a_pipeline_stopped_before_the_state_file_was_damaged_stays_stopped(tmp_path) -> None:
    """The fallback is the last save: one save behind, it restarted a camera its user had stopped (a field test)."""
    path = tmp_path / "active_state.json"
    save_state(path, [PipelineConfig("pipe_1", "quiet", "http://127.0.0.1:1/")])  # started
    save_state(path, [])  # /vision stop quiet
    path.write_text('{"pipelines": [ {"id": 3')  # written over in place from outside: a hard link would share it
    assert load_state(path) == []
    assert oct((tmp_path / "active_state.json.bak").stat().st_mode & 0o777) == "0o600"  # stream URLs hold passwords

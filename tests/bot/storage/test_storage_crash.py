"""State that survives kill -9: a store killed mid-write opens whole; one damaged from outside is named and kept aside."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.storage import TinyDBStorage
from tests.bot.cli.test_cli import ROOT

# A writer as the alert router is during mute/unmute: one upsert after another into a growing table, as fast as it can.
WRITER = """
import sys
from pathlib import Path
from bot.storage import TinyDBStorage
store = TinyDBStorage(Path(sys.argv[1]))
mutes = store.table("mutes")
print("ready", flush=True)
i = 0
while True:
    i += 1
    mutes.upsert({"camera": f"cam{i % 40}", "until": i, "note": "x" * (i % 300)}, camera=f"cam{i % 40}")
"""


def test_kill_9_in_the_middle_of_writes_never_leaves_a_broken_store(tmp_path: Path) -> None:
    path = tmp_path / "alerts.json"
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                                cwd=ROOT)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 30  # let it write for a while: until the file has grown past a few rows
            while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 2000 + attempt * 500):
                time.sleep(0.01)
            time.sleep((attempt % 4) * 0.013)  # land the kill at different points of a write
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        store = TinyDBStorage(path)
        try:
            rows = store.table("mutes").all()
            assert rows and all(set(r) == {"camera", "until", "note"} for r in rows)
        finally:
            store.close()
        assert not list(tmp_path.glob("*.corrupt-*")), f"kill {attempt + 1} left a damaged file"


def test_a_store_damaged_from_outside_is_kept_aside_and_the_last_good_copy_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "alerts.json"
    store = TinyDBStorage(path)
    store.table("mutes").upsert({"camera": "dock", "until": 1}, camera="dock")
    store.table("mutes").upsert({"camera": "gate", "until": 2}, camera="gate")  # the first version is now .bak
    store.close()
    path.write_text('{"mutes": {"1": {"camera": "do')  # cut short, as a full disk or a bad copy leaves it
    with caplog.at_level(logging.ERROR):
        again = TinyDBStorage(path)
    assert [r["camera"] for r in again.table("mutes").all()] == ["dock"]  # the last good copy, not nothing
    [kept] = tmp_path.glob("alerts.json.corrupt-*")
    assert kept.read_text().startswith('{"mutes"')
    assert "alerts.json was damaged" in caplog.text and kept.name in caplog.text
    again.table("mutes").upsert({"camera": "yard", "until": 3}, camera="yard")  # and it goes on working
    again.close()
    path.write_text("not json")
    (tmp_path / "alerts.json.bak").write_text("also not json")
    third = TinyDBStorage(path)
    assert third.table("mutes").all() == [] and len(list(tmp_path.glob("alerts.json.corrupt-*"))) >= 1
    third.table("mutes").upsert({"camera": "dock", "until": 4}, camera="dock")
    assert [r["camera"] for r in third.table("mutes").all()] == ["dock"]

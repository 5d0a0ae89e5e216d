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

from bot.storage import Backend, SQLiteStorage, TinyDBStorage, open_storage
from tests.bot.cli.test_cli import ROOT

# A writer as the alert router is during mute/unmute: one upsert after another into a growing table, as fast as it can.
# It says how far it got every 20 writes.
WRITER = """
import sys
from pathlib import Path
from bot.storage import open_storage
store = open_storage(Path(sys.argv[1]), sys.argv[2])
mutes = store.table("mutes")
print("ready", flush=True)
i = 0
while True:
    i += 1
    mutes.upsert({"camera": f"cam{i % 40}", "until": i, "note": "x" * (i % 300)}, camera=f"cam{i % 40}")
    if i % 20 == 0:
        print(i, flush=True)
"""


@pytest.mark.parametrize("backend", ["tinydb", "sqlite"])
def test_kill_9_in_the_middle_of_writes_never_leaves_a_broken_store(tmp_path: Path, backend: Backend) -> None:
    path = tmp_path / "alerts.json"
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), backend], stdout=subprocess.PIPE,
                                text=True, cwd=ROOT)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            for _ in range(3 + attempt):  # let it write for a while: past the first rows, more each time
                assert proc.stdout.readline().strip(), "the writer died"
            time.sleep((attempt % 4) * 0.013)  # land the kill at different points of a write
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        store = open_storage(path, backend)
        try:
            rows = store.table("mutes").all()
            assert rows and all(set(r) == {"camera", "until", "note"} for r in rows)
        finally:
            store.close()
        assert not list(tmp_path.glob("*.corrupt-*")), f"kill {attempt + 1} left a damaged file"
    assert (tmp_path / "alerts.sqlite3").exists() == (backend == "sqlite")


def test_a_store_damaged_from_outside_is_kept_aside_and_the_last_good_copy_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "alerts.json"
    store = TinyDBStorage(path)
    store.table("mutes").upsert({"camera": "dock", "until": 1}, camera="dock")
    store.table("mutes").upsert({"camera": "gate", "until": 2}, camera="gate")  # .bak holds this save too
    store.close()
    path.write_text('{"mutes": {"1": {"camera": "do')  # cut short, as a full disk or a bad copy leaves it
    with caplog.at_level(logging.ERROR):
        again = TinyDBStorage(path)
    assert [r["camera"] for r in again.table("mutes").all()] == ["dock", "gate"]  # the last save, not nothing
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


def test_a_sqlite_store_damaged_from_outside_is_kept_aside_and_starts_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "alerts.sqlite3"
    store = SQLiteStorage(path)
    store.table("mutes").upsert({"camera": "dock", "until": 1}, camera="dock")
    store.close()
    path.write_bytes(b"not a database, " * 512)  # overwritten from outside: SQLite keeps no last good copy
    with caplog.at_level(logging.ERROR):
        again = SQLiteStorage(path)
    [kept] = tmp_path.glob("alerts.sqlite3.corrupt-*")
    assert kept.read_bytes().startswith(b"not a database")
    assert "alerts.sqlite3 was damaged" in caplog.text and kept.name in caplog.text and again.recovered
    assert again.table("mutes").all() == []
    again.table("mutes").upsert({"camera": "yard", "until": 3}, camera="yard")  # and it goes on working
    assert [r["camera"] for r in again.table("mutes").all()] == ["yard"]


@pytest.mark.parametrize("damage", [
    '{"mutes": []}', '{"mutes": {"1": "dock"}}', '{"mutes": 5}', '{"mutes": {"x": {"camera": "z"}}}',
    '{"mutes": {"1": {"camera": "z"}}, "rules": null}', '{"mutes": {"1": ["camera", "z"]}}',
])
def test_a_store_that_is_json_but_not_a_store_is_damaged_too(tmp_path: Path, damage: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """Valid JSON of the wrong shape (a hand edit, a bad merge) failed every later read and write of every table,
    so every alert; it is kept aside like a cut-short file and the last good copy goes on."""
    path = tmp_path / "alerts.json"
    store = TinyDBStorage(path)
    store.table("mutes").upsert({"camera": "dock", "until": 1}, camera="dock")
    store.table("mutes").upsert({"camera": "gate", "until": 2}, camera="gate")
    store.close()
    path.write_text(damage)
    with caplog.at_level(logging.ERROR):
        again = TinyDBStorage(path)
        assert [r["camera"] for r in again.table("mutes").all()] == ["dock", "gate"]  # the last save
    assert "alerts.json was damaged" in caplog.text and list(tmp_path.glob("alerts.json.corrupt-*"))
    again.table("rules").upsert({"id": "r1"}, id="r1")
    assert again.table("rules").all() == [{"id": "r1"}]

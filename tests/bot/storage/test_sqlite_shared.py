"""The SQLite store shared by processes: concurrent upserts lose nothing, a one-shot command beside the bot writes
what the bot reads, a TinyDB store is copied in once, and `storage.backend` decides which files the stores use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import SettingsError, load_settings
from bot.runtime import Runtime
from bot.storage import TinyDBStorage, open_storage
from tests.bot.cli.test_cli import ROOT
from tests.fakes.waits import patience

# One process of several: open the store (adopting the TinyDB file if it is the first), wait for "go", then upsert
# its own rows as fast as it can, and its own field of one row every process shares.
UPSERTER = """
import sys
from pathlib import Path
from bot.storage import open_storage
path, me, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
t = open_storage(path, "sqlite").table("mutes")
print("ready", flush=True)
sys.stdin.readline()
for i in range(n):
    t.upsert({"camera": f"{me}-{i}", "until": i}, camera=f"{me}-{i}")
    t.upsert({"camera": "shared", me: i}, camera="shared")
print("done", flush=True)
"""


def _run_together(path: Path, names: list[str], n: int) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", UPSERTER, str(path), me, str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT) for me in names]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for p in procs:  # both start writing at the same moment
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, _ = p.communicate(timeout=patience(120))
            assert p.returncode == 0 and out.strip() == "done"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_two_processes_upserting_one_table_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "alerts.json"
    seed = TinyDBStorage(path)  # what the bot held before the switch to sqlite
    seed.table("mutes").upsert({"camera": "old", "until": 1}, camera="old")
    seed.close()
    _run_together(path, ["a", "b"], 150)
    rows = open_storage(path, "sqlite").table("mutes").all()
    cameras = [r["camera"] for r in rows]
    assert sorted(cameras) == sorted(["old", "shared"] + [f"{me}-{i}" for me in "ab" for i in range(150)])
    assert cameras[0] == "old"  # the TinyDB rows were copied once, by whichever process opened first
    [shared] = [r for r in rows if r["camera"] == "shared"]  # never inserted twice by a read-then-insert race
    assert shared["a"] == 149 and shared["b"] == 149  # each process's last write to it survived the other's


def test_switching_to_sqlite_copies_the_tinydb_store_once_and_leaves_it_as_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "monitor.json"
    old = TinyDBStorage(path)
    old.table("rules").upsert({"id": "line_crossed", "camera": "door"}, id="line_crossed")
    old.table("rules").upsert({"id": "count_above", "camera": "door"}, id="count_above")
    old.table("extra").upsert({"k": 1}, k=1)
    old.close()
    before = json.loads(path.read_text())
    with caplog.at_level("WARNING"):
        new = open_storage(path, "sqlite")
    assert "monitor.sqlite3: copied 3 records from monitor.json" in caplog.text
    assert [r["id"] for r in new.table("rules").all()] == ["line_crossed", "count_above"]  # in their order
    assert new.names() == ["extra", "rules"]
    assert {p.stat().st_mode & 0o777 for p in tmp_path.glob("monitor.sqlite3*")} == {0o600}  # as the JSON stores
    new.table("rules").remove(id="count_above")
    new.close()
    assert json.loads(path.read_text()) == before  # untouched: switching back goes back to it
    again = open_storage(path, "sqlite")  # opened again: nothing copied a second time
    assert [r["id"] for r in again.table("rules").all()] == ["line_crossed"]
    fresh = open_storage(tmp_path / "cron.json", "sqlite")  # no TinyDB file: starts empty, and stays its own
    TinyDBStorage(tmp_path / "cron.json").table("jobs").upsert({"name": "later"}, name="later")
    assert open_storage(tmp_path / "cron.json", "sqlite").table("jobs").all() == [] and fresh.names() == []


async def test_the_storage_setting_puts_the_bots_stores_in_sqlite(base_env: dict[str, str]) -> None:
    settings = load_settings({**base_env, "VISION_AGENT_STORAGE": "sqlite"})
    state = settings.workspace / ".state"
    async with Runtime(settings, background=False) as rt:
        rt.router.set_route("C_DOOR", "door")
    assert (state / "alerts.sqlite3").exists() and (state / "monitor.sqlite3").exists()
    assert not (state / "alerts.json").exists()  # the route went to SQLite, not to TinyDB
    async with Runtime(settings, background=False) as rt:
        assert rt.router.channel_for("door") == "C_DOOR"
    async with Runtime(load_settings(base_env), background=False) as rt:  # the default is still TinyDB
        assert rt.router.channel_for("door") is None
        rt.router.set_route("C_GATE", "gate")
    assert (state / "alerts.json").exists()
    with pytest.raises(SettingsError, match=r"VISION_AGENT_STORAGE \(storage.backend\).*'tinydb' or 'sqlite'"):
        load_settings({**base_env, "VISION_AGENT_STORAGE": "redis"})


async def test_a_one_shot_command_beside_the_running_bot_writes_the_store_they_share(base_env: dict[str, str]) -> None:
    settings = load_settings({**base_env, "VISION_AGENT_STORAGE": "sqlite"})
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    async with Runtime(settings, background=False) as rt:  # the running bot, holding its stores open
        rt.router.mute("gate", 600)
        done = subprocess.run(  # `vision-agent chat -m "/vision route …"`, this tree's code (cwd first on sys.path)
            [sys.executable, "-c", "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))",
             "chat", "-m", "/vision route C_OPS camera=door"],
            env={**env, **base_env, "VISION_AGENT_STORAGE": "sqlite"}, cwd=ROOT, capture_output=True, text=True,
            timeout=patience(120))
        assert done.returncode == 0, done.stderr
        assert rt.router.channel_for("door") == "C_OPS"  # the bot sees it at once, without a restart
        assert rt.router.muted_until("gate") is not None  # and its own write is still there
    assert not (settings.workspace / ".state" / "alerts.json").exists()

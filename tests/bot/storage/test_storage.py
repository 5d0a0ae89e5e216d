"""The state stores run on the storage interface: TinyDB by default, SQLite or any other backend unchanged."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.monitoring.alerts import AlertRouter
from bot.monitoring.monitor import Monitor
from bot.monitoring.rules import Rule
from bot.scheduling.inputs import SchedulerInputs
from bot.scheduling.scheduler import Scheduler
from bot.storage import Record, SQLiteStorage, Storage, Table, TinyDBStorage


class _DictTable(Table):
    def __init__(self) -> None:
        self.rows: list[Record] = []

    def _matches(self, row: Record, match: dict[str, Any]) -> bool:
        return all(row.get(k) == v for k, v in match.items())

    def all(self) -> list[Record]:
        return [dict(r) for r in self.rows]

    def get(self, **match: Any) -> Record | None:
        return next((dict(r) for r in self.rows if self._matches(r, match)), None)

    def upsert(self, record: Record, **match: Any) -> None:
        hits = [r for r in self.rows if self._matches(r, match)]
        for r in hits:
            r.update(record)
        if not hits:
            self.rows.append(dict(record))

    def remove(self, **match: Any) -> int:
        before = len(self.rows)
        self.rows = [r for r in self.rows if not self._matches(r, match)]
        return before - len(self.rows)

    def discard(self, record: Record) -> int:
        before = len(self.rows)
        self.rows = [r for r in self.rows if r != record]
        return before - len(self.rows)


class DictStorage(Storage):
    """A second backend, in memory: what a Redis or SQLite backend would implement."""

    def __init__(self, path: Path = Path("memory.json")) -> None:
        self.tables: dict[str, _DictTable] = {}
        self.path = path

    def table(self, name: str) -> Table:
        return self.tables.setdefault(name, _DictTable())

    def names(self) -> list[str]:
        return sorted(n for n, t in self.tables.items() if t.rows)

    def close(self) -> None:
        pass


ON_DISK = {"tinydb": lambda p: TinyDBStorage(p / "s.json"), "sqlite": lambda p: SQLiteStorage(p / "s.sqlite3")}
BACKENDS = {**ON_DISK, "dict": lambda p: DictStorage()}


@pytest.mark.parametrize("make", BACKENDS.values(), ids=BACKENDS.keys())
def test_table_contract(tmp_path: Path, make) -> None:
    store = make(tmp_path)
    t = store.table("routes")
    t.upsert({"camera": "a", "channel": "C1"}, camera="a")
    t.upsert({"camera": "a", "channel": "C2"}, camera="a")  # replaced, not duplicated
    t.upsert({"camera": "b", "channel": "C3"}, camera="b")
    assert t.all() == [{"camera": "a", "channel": "C2"}, {"camera": "b", "channel": "C3"}]
    assert t.get(camera="b") == {"camera": "b", "channel": "C3"} and t.get(camera="zz") is None
    assert t.remove(camera="a") == 1 and t.remove(camera="a") == 0
    assert store.names() == ["routes"]
    if make is not BACKENDS["dict"]:
        with pytest.raises(ValueError):
            t.get()  # an empty match would hit every row


@pytest.mark.parametrize("make", ON_DISK.values(), ids=ON_DISK.keys())
def test_matching_is_field_equality_as_tinydb_has_it(tmp_path: Path, make) -> None:
    t = make(tmp_path).table("jobs")
    t.upsert({"name": "a", "every": 5, "tags": {"x": [1, 2]}, "off": None}, name="a")
    t.upsert({"name": "b", "every": 6.0}, name="b")
    assert t.get(every=5.0)["name"] == "a" and t.get(tags={"x": [1, 2]})["name"] == "a"
    assert t.get(off=None)["name"] == "a"
    assert t.get(name="b", off=None) is None  # a missing field never equals None
    t.upsert({"every": 7}, every=6)  # fields merged into every match
    assert t.all()[1] == {"name": "b", "every": 7}


@pytest.mark.parametrize("make", ON_DISK.values(), ids=ON_DISK.keys())
def test_a_write_that_fails_changes_nothing_and_the_store_goes_on(tmp_path: Path, make) -> None:
    t = make(tmp_path).table("routes")
    t.upsert({"camera": "a", "channel": "C1"}, camera="a")
    with pytest.raises(TypeError):
        t.upsert({"camera": "a", "channel": object()}, camera="a")  # not JSON: refused whole
    assert t.all() == [{"camera": "a", "channel": "C1"}]
    t.upsert({"camera": "b", "channel": "C2"}, camera="b")
    assert [r["camera"] for r in t.all()] == ["a", "b"]


@pytest.mark.parametrize("make", ON_DISK.values(), ids=ON_DISK.keys())
def test_threads_sharing_one_store_lose_nothing(tmp_path: Path, make) -> None:
    t = make(tmp_path).table("mutes")  # pipeline threads and the event loop share a store

    def writer(me: int) -> None:
        for i in range(40):
            t.upsert({"camera": f"{me}-{i}", "until": i}, camera=f"{me}-{i}")
            t.upsert({"camera": "shared", f"t{me}": i}, camera="shared")

    threads = [threading.Thread(target=writer, args=(me,)) for me in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(t.all()) == 4 * 40 + 1
    assert t.get(camera="shared") == {"camera": "shared", "t0": 39, "t1": 39, "t2": 39, "t3": 39}


@pytest.mark.parametrize("make", ON_DISK.values(), ids=ON_DISK.keys())
def test_storage_survives_a_restart(tmp_path: Path, make) -> None:
    first = make(tmp_path)
    first.table("mutes").upsert({"camera": "a", "until": 5.0}, camera="a")
    first.close()
    first.close()  # safe twice
    assert make(tmp_path).table("mutes").all() == [{"camera": "a", "until": 5.0}]


@pytest.mark.parametrize("make", ON_DISK.values(), ids=ON_DISK.keys())
def test_two_openers_of_one_file_take_turns_without_clashing_ids(tmp_path: Path, make) -> None:
    """The bot and a `chat -m` beside it each open the store; writes in turn must not collide (TinyDB cached the
    next document id: the bot's next insert failed "Document with ID 2 already exists")."""
    bot, one_shot = make(tmp_path), make(tmp_path)
    bot.table("routes").upsert({"camera": "a", "channel": "C1"}, camera="a")
    one_shot.table("routes").upsert({"camera": "b", "channel": "C2"}, camera="b")
    bot.table("routes").upsert({"camera": "c", "channel": "C3"}, camera="c")
    one_shot.table("routes").upsert({"camera": "d", "channel": "C4"}, camera="d")
    assert sorted(r["camera"] for r in make(tmp_path).table("routes").all()) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("backend", ["dict", "sqlite"])
def test_router_monitor_and_scheduler_run_on_another_backend(tmp_path: Path, settings: Settings, backend) -> None:
    store = BACKENDS[backend](tmp_path)
    router = AlertRouter(tmp_path / "unused.json", storage=store)
    router.set_route("C_DOOR", "door")
    router.mute("door", 60)
    assert AlertRouter(tmp_path / "unused.json", storage=store).channel_for("door") == "C_DOOR"
    assert router.muted_until("door") is not None

    monitor = Monitor(router, None, settings, storage=store)
    monitor.add_rule(Rule("line_crossed", "door", cooldown_seconds=60))
    assert [r.id for r in Monitor(router, None, settings, storage=store).rules("door")] == ["line_crossed"]

    sched = Scheduler(SchedulerInputs(settings), storage=store)
    sched.add_job("snap", "snapshot", camera="door", every_minutes=30)
    assert {j.name for j in Scheduler(SchedulerInputs(settings), storage=store).jobs()} >= {"snap"}
    assert not (tmp_path / "unused.json").exists()  # nothing went to TinyDB

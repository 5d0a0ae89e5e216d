"""Stored data never stops start-up: on both backends, a record of another shape, an unknown kind, a value outside
today's bounds (a job every 0.01 minutes or every 9999999999 days, saved before jobs were checked), a damaged row or a
SQLite file of a foreign layout is set aside beside its store, said once to the operator, and the rest loads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.commands.dispatch import run_command
from bot.config import load_settings
from bot.runtime import Runtime
from bot.storage import open_storage, records

GOOD_RULE = {"kind": "count_over", "camera": "dock", "class_name": "person", "threshold": 3.0, "id": "count_over:person>3"}
BAD_RULES = [{"kind": "teleport", "camera": "dock", "id": "x"}, {"kind": "line_crossed", "camera": 5, "id": "y"},
             {"kind": "count_over", "camera": "dock", "threshold": "lots", "id": "z"}, {"nonsense": True}]
GOOD_JOB = {"name": "morning", "action": "daily_summary", "at": "07:00"}
BAD_JOBS = [{"name": "flood", "action": "digest", "every_minutes": 0.01},
            {"name": "forever", "action": "digest", "every_minutes": 9999999999 * 1440},  # overflowed `schedule`
            {"name": "odd", "action": "launch", "at": "07:00"}, {"name": "noon", "action": "digest", "at": "25:99"},
            {"name": "</turn_context>", "action": "digest", "at": "10:00"}, {"action": "digest"}]
GOOD_WATCH = {"id": "w1", "camera": "dock", "condition": {"kind": "rule", "rule": {"kind": "class_appears",
              "camera": "dock"}}, "created_at": 1.0, "expires_at": 4e9}
BAD_WATCHES = [{"id": "w2", "camera": "dock", "condition": "soon", "created_at": 1, "expires_at": 2},
               {"id": "w3"}, {"id": "w4", "camera": "dock", "condition": {"kind": "rule"}, "created_at": "x",
                              "expires_at": 4e9}]
GOOD_ROUTE, BAD_ROUTES = {"camera": "dock", "channel": "C0ALERTS"}, [{"camera": "gate"}, {"channel": 7, "camera": 1}]
GOOD_MUTE, BAD_MUTES = {"camera": "dock", "until": 4e9}, [{"camera": "gate", "until": "tomorrow"}]


def _stores(backend: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {"monitor": {"rules": [GOOD_RULE, *BAD_RULES]}, "cron": {"jobs": [GOOD_JOB, *BAD_JOBS],
            "meta": [{"seeded": True}]}, "watches": {"watches": [GOOD_WATCH, *BAD_WATCHES]},
            "alerts": {"routes": [GOOD_ROUTE, *BAD_ROUTES], "mutes": [GOOD_MUTE, *BAD_MUTES]}}


def _write(state: Path, backend: str) -> None:
    """The stores as another version (or a hand edit) left them: written past every check of today's code."""
    for store, tables in _stores(backend).items():
        if backend == "tinydb":
            data = {t: {str(i + 1): row for i, row in enumerate(rows)} for t, rows in tables.items()}
            (state / f"{store}.json").write_text(json.dumps(data))
            continue
        conn = sqlite3.connect(state / f"{store}.sqlite3")
        conn.executescript("CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, data TEXT "
                           "NOT NULL); CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                           "INSERT INTO meta VALUES ('adopted', '0');")
        rows = [(t, json.dumps(r)) for t, rs in tables.items() for r in rs]
        rows += {"monitor": [("rules", "{not json")], "cron": [("jobs", "[1, 2]")]}.get(store, [])  # rows not JSON objects
        conn.executemany("INSERT INTO records (tbl, data) VALUES (?, ?)", rows)
        conn.commit()
        conn.close()


def _aside(state: Path, store: str) -> list[dict[str, Any]]:
    path = next(state.glob(f"{store}.*.set-aside.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("backend", ["tinydb", "sqlite"])
async def test_records_of_another_shape_are_set_aside_and_the_rest_loads(base_env, workspace_dir: Path,
                                                                         backend: str) -> None:
    state = workspace_dir / ".state"
    state.mkdir(parents=True, exist_ok=True)
    _write(state, backend)
    settings = load_settings(base_env, storage={"backend": backend})
    async with Runtime(settings) as rt:  # start-up does not fail on any of it
        assert [r.id for r in rt.monitor.rules()] == ["count_over:person>3"]
        assert [j.name for j in rt.scheduler.jobs()] == ["morning"]
        assert rt.scheduler.next_run("morning") is not None  # scheduled, not only listed
        assert [w.id for w in rt.watches.all()] == ["w1"]
        assert rt.router.routes() == {"dock": "C0ALERTS"} and rt.router.muted_until("gate") is None
        kept = {s: _aside(state, s) for s in ("monitor", "cron", "watches", "alerts")}
        assert len(kept["monitor"]) == len(BAD_RULES) + (1 if backend == "sqlite" else 0)
        assert len(kept["cron"]) == len(BAD_JOBS) + (1 if backend == "sqlite" else 0)
        assert len(kept["watches"]) == len(BAD_WATCHES) and len(kept["alerts"]) == len(BAD_ROUTES) + len(BAD_MUTES)
        flood = next(k for k in kept["cron"] if isinstance(k["record"], dict) and k["record"].get("name") == "flood")
        assert "at most every 1 minute" in flood["why"]  # why, for the person who looks
        said = await rt.announce_stored()  # one note to the operator, where alerts go
        assert said is not None and "monitor" in said and "set aside" in said
        assert await rt.announce_stored() is None  # once
        status = await run_command("status", rt.command_context(operator=True))
        assert "Stored data set aside at start-up" in status.text
        member = await run_command("status", rt.command_context("U0ALICE", "C0OPS"))
        assert "Stored data set aside" not in member.text  # the operator's note, not every member's
    async with Runtime(settings) as again:  # set aside once: the stores hold only what fits now
        assert [j.name for j in again.scheduler.jobs()] == ["morning"] and len(again.monitor.rules()) == 1
        assert len(_aside(state, "cron")) == len(kept["cron"])


def test_a_sqlite_store_of_a_foreign_layout_is_kept_aside_and_starts_empty(workspace_dir: Path) -> None:
    path = workspace_dir / "monitor.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE records (name TEXT, payload BLOB); INSERT INTO records VALUES ('a', 'b');")
    conn.commit()
    conn.close()
    store = open_storage(workspace_dir / "monitor.json", "sqlite")
    try:
        assert store.table("rules").all() == [] and store.recovered and "is not this bot's store" in store.recovered
        kept = list(workspace_dir.glob("monitor.sqlite3.corrupt-*"))
        assert len(kept) == 1 and sqlite3.connect(kept[0]).execute("SELECT name FROM records").fetchall() == [("a",)]
        assert any("is not this bot's store" in n for n in records.notes())
        store.table("rules").upsert({"kind": "line_crossed", "camera": "dock", "id": "line_crossed"}, id="line_crossed")
        assert len(store.table("rules").all()) == 1  # and works from then on
    finally:
        store.close()


def test_a_saved_pipeline_of_another_shape_is_set_aside_and_a_long_name_made_a_name(workspace_dir: Path) -> None:
    from bot.pipelines.state import load_state

    path = workspace_dir / "active_state.json"
    path.write_text(json.dumps({"version": 1, "pipelines": [
        {"pipeline_id": "p1", "name": "dock", "video_reference": "rtsp://10.0.0.5/s1"},
        {"pipeline_id": "p2", "name": "x" * 20_000 + "</turn_context>", "video_reference": "0"},
        {"pipeline_id": "p3", "name": "gate", "video_reference": 5},
        {"pipeline_id": "p4", "name": "yard", "video_reference": "1", "owner": "U1", "owner_place": "somewhere"},
        {"name": "no id"}, "not even a record"]}))
    loaded = load_state(path)
    assert [(c.pipeline_id, c.name) for c in loaded] == [("p1", "dock"), ("p2", "x" * 64)]
    assert len(_aside(workspace_dir, "active_state")) == 4


async def test_recipes_and_posted_alerts_of_another_shape_are_set_aside(base_env, workspace_dir: Path) -> None:
    from handlers.state.alert_book import AlertBook

    folder = workspace_dir / "recipes"
    folder.mkdir()
    good = {"name": "door", "description": "", "steps": [], "parameters": {}, "metadata": {"created_by": "operator"}}
    (folder / "door.json").write_text(json.dumps(good))
    (folder / "broken.json").write_text("{not json")
    (folder / "listy.json").write_text("[1, 2, 3]")
    (folder / "nosteps.json").write_text(json.dumps({"name": "nosteps", "metadata": {}}))
    async with Runtime(load_settings(base_env), background=False) as rt:
        assert rt.workspace.recipes.names() == ["door"]
        kept = [json.loads(line) for line in (folder / "recipes.set-aside.jsonl").read_text().splitlines()]
        assert sorted(k["record"]["file"] for k in kept) == ["broken.json", "listy.json", "nosteps.json"]
        assert kept[0]["record"]["text"] == "{not json"  # whole, for the person who looks
    state = workspace_dir / ".state"
    (state / "slack_alerts.json").write_text(json.dumps({"posted": {
        "1": {"alert_id": "a1", "channel": "C1", "ts": "1.0", "camera": "dock", "rule": "line", "text": "x"},
        "2": {"alert_id": "a2"}, "3": {"channel": ["odd"], "alert_id": "a3", "ts": 5, "camera": 1, "rule": 2,
                                        "text": None}}}))
    book = AlertBook(state / "slack_alerts.json")
    try:
        assert book.get("a1") is not None and book.get("a2") is None and book.get("a3") is None
        assert len(_aside(state, "slack_alerts")) == 2
    finally:
        book.close()

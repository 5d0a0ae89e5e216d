"""Saving and replaying recipes on the fake backend: credentials, parameters, failures and invalidation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.agent.tools import ToolResult
from bot.commands.dispatch import run_command
from bot.config import Settings
from bot.llm.client import ToolCall
from bot.rights import OPERATOR, Requester
from tests.bot.recipes.helpers import Rig, rig
from tests.tools.fake_backend import FakeBackend

SESSION = "cli:test"


def started(name: str, source: str, **extra: object) -> tuple[ToolCall, ToolResult]:
    """A start_pipeline call the model made and its (successful) result, as the agent loop records them."""
    args = {"video_reference": source, "pipeline_name": name, "model_id": "builtin/faces", "line": "middle", **extra}
    return ToolCall("toolu_1", "start_pipeline", args), ToolResult(text=f"Pipeline '{name}' started.")


@pytest.fixture
def r(settings: Settings) -> Rig:
    return rig(settings, FakeBackend(), timeout=0.5)


def video(r: Rig, name: str = "door.mp4") -> Path:
    path = r.ws.root / "videos" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42")  # the fake backend only checks the file exists
    return path


def test_a_turn_that_changed_nothing_is_not_recorded(r: Rig) -> None:
    look = (ToolCall("t", "list_pipelines", {}), ToolResult(text="No pipelines."))
    failed = (started("door", "/nope.mp4")[0], ToolResult.error("cannot open"))
    assert not r.recipes.record(SESSION, OPERATOR, [look, failed], "Nothing runs.")
    with pytest.raises(ValueError, match="Nothing to save yet"):
        r.recipes.save("door-count", "", SESSION, OPERATOR)


def test_save_lifts_the_per_use_values_into_parameters(r: Rig) -> None:
    src = video(r)
    assert r.recipes.record(SESSION, OPERATOR, [started("door", str(src), max_fps=5)], "Counting the door.")
    text = r.recipes.save("Door-Count", "count the door", SESSION, OPERATOR)
    assert "Saved recipe *door-count*" in text
    saved = json.loads((r.ws.root / "recipes" / "door-count.json").read_text())
    assert saved["parameters"] == {"source": str(src), "name": "door", "model": "builtin/faces", "line": "middle",
                                   "fps": 5}
    # recorded with the tool's old argument names, saved by their one names (bot/objects/pipeline.py)
    assert saved["steps"] == [{"tool": "start_pipeline", "input": {
        "source": {"$param": "source"}, "name": {"$param": "name"}, "model": {"$param": "model"},
        "line": {"$param": "line"}, "fps": {"$param": "fps"}}}]
    meta = saved["metadata"]
    assert meta["created_by"] == "operator" and meta["successes"] == meta["failures"] == 0 and meta["invalid"] is None
    assert r.ws.recipes.listing() == [("door-count", "count the door")]


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x" * 60])
def test_a_recipe_name_cannot_leave_the_folder(r: Rig, name: str) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("door", str(video(r)))], "ok")
    with pytest.raises(ValueError, match="name is 1-48 lower-case letters"):
        r.recipes.save(name, "", SESSION, OPERATOR)
    assert not list(r.ws.root.glob("**/evil*"))


def test_camera_url_with_password_is_stored_as_the_camera_name(r: Rig) -> None:
    (r.ws.root / "CAMERAS.md").write_text(
        "| name | url |\n|---|---|\n| door | rtsp://admin:hunter2secret@10.0.0.5:554/stream |\n")
    # The model only ever sees the masked URL; what it repeats is recorded (and redacted again) as it came.
    r.recipes.record(SESSION, OPERATOR, [started("door", "rtsp://admin:***@10.0.0.5:554/stream")], "ok")
    r.recipes.save("door-count", "", SESSION, OPERATOR)
    raw = (r.ws.root / "recipes" / "door-count.json").read_text()
    assert "hunter2secret" not in raw and "***" not in raw and "10.0.0.5" not in raw
    assert json.loads(raw)["parameters"]["source"] == "door"
    for path in r.ws.sessions_dir.glob("trajectories/*.jsonl"):
        assert "hunter2secret" not in path.read_text()


def test_a_url_with_a_password_and_no_camera_is_refused(r: Rig) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("x", "rtsp://bob:s3cretpass@192.0.2.9/live")], "ok")
    with pytest.raises(ValueError, match="password or token"):
        r.recipes.save("x-count", "", SESSION, OPERATOR)
    assert not (r.ws.root / "recipes" / "x-count.json").exists()


async def test_missing_source_fails_cleanly_counts_failures_and_invalidates(r: Rig, tmp_path: Path) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("door", str(video(r)))], "ok")
    r.recipes.save("door-count", "", SESSION, OPERATOR)
    gone = r.ws.root / "videos" / "gone.mp4"
    for attempt in range(1, 4):
        reply = await run_command(f"recipe run door-count source={gone}", r.command())
        assert not reply.ok and "Step 1 (start_pipeline) failed" in reply.text
        meta = json.loads((r.ws.root / "recipes" / "door-count.json").read_text())["metadata"]
        assert meta["failures"] == attempt and meta["step_failures"] == {"0": attempt}
        assert meta["last_failure"]["step"] == 1 and meta["last_failure"]["error"]
    assert "now invalid: step 1 failed 3 times" in reply.text
    reply = await run_command("recipe run door-count", r.command())  # even with the good source: not trusted
    assert not reply.ok and "is invalid: step 1 failed 3 times" in reply.text
    assert r.mgr.snapshot() == []  # nothing was started by the refused run
    listing = await run_command("recipes", r.command())
    assert "door-count" in listing.text and "0 ok / 3 failed" in listing.text and "invalid" in listing.text


async def test_unknown_parameter_and_unknown_recipe_are_one_line(r: Rig) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("door", str(video(r)))], "ok")
    r.recipes.save("door-count", "", SESSION, OPERATOR)
    bad = await run_command("recipe run door-count camera=cam2", r.command())
    assert not bad.ok and "unknown parameter camera=" in bad.text and "source" in bad.text
    none = await run_command("recipe run nope", r.command())
    assert not none.ok and "No recipe 'nope'" in none.text


async def test_allowlist_refuses_saving_and_running_but_not_listing(settings: Settings) -> None:
    guarded = settings.model_copy(update={"slack": settings.slack.model_copy(update={"allowed_users": ["U1"]})})
    g = rig(guarded, FakeBackend(), timeout=0.5)
    g.recipes.record("slack:T:C1:1.0", Requester.slack("U1", "C1"), [started("door", str(video(g)))], "ok")
    for line in ("recipe save door-count", "recipe run door-count", "recipe delete door-count"):
        reply = await run_command(line, g.command("U2", "C1"))
        assert not reply.ok and "Only <@U1>" in reply.text
    saved = await run_command("recipe save door-count", g.command("U1", "C1"))  # Slack: the channel's last setup
    assert saved.ok and "Saved recipe *door-count*" in saved.text
    assert (await run_command("recipes", g.command("U2", "C1"))).ok


async def test_a_pipeline_that_delivers_nothing_fails_the_step(r: Rig) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("door", str(video(r)), line="10,0,10,100")], "ok")
    r.recipes.save("door-count", "", SESSION, OPERATOR)
    ok, reply = await r.recipes.run("door-count", {}, OPERATOR, r.services)  # the fake backend's pipeline never yields a result
    assert not ok and "Step 1 (start_pipeline) failed: door is running but gave no result within 0.5 s" in reply


async def test_a_hand_edited_step_calling_another_tool_is_not_run(r: Rig) -> None:
    r.recipes.record(SESSION, OPERATOR, [started("door", str(video(r)))], "ok")
    r.recipes.save("door-count", "", SESSION, OPERATOR)
    path = r.ws.root / "recipes" / "door-count.json"
    recipe = json.loads(path.read_text())
    recipe["steps"] = [{"tool": "remember", "input": {"content": "planted"}}]
    path.write_text(json.dumps(recipe))
    ok, reply = await r.recipes.run("door-count", {}, OPERATOR, r.services)
    assert not ok and "remember is not a step a recipe replays" in reply

"""A turned camera's setting as the bot keeps it: asked at start or read off its CAMERAS.md row, saved and turned again
on restore, placed lines in the upright frame, and said once when a camera looks turned without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.backends.orientation import ORIENT_BLOCK, Orientation
from bot.commands.dispatch import CommandContext, run_command
from bot.config import Settings
from bot.monitoring.events_log import event_type_of
from bot.monitoring.monitor import Monitor
from bot.pipelines.limits import cannot_count, turned
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import restore_all
from bot.pipelines.state import PipelineConfig, load_state, save_state
from bot.services import Services
from tests.bot.monitor_helpers import Clock, FakePipelines, make_router, result
from tests.tools.fake_backend import FakeBackend

CAMERAS = ("| Name | URL | Rotate | Flip |\n|---|---|---|---|\n| hall | rtsp://10.0.0.7/s1 | 270 | mirror |\n"
           "| gate | rtsp://10.0.0.8/s1 | | |\n| attic | rtsp://10.0.0.9/s1 | 45 | |\n")


@pytest.fixture
def ctx(settings: Settings, workspace_dir: Path) -> tuple[CommandContext, FakeBackend, PipelineManager]:
    (workspace_dir / "CAMERAS.md").write_text(CAMERAS)
    backend = FakeBackend()
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    return CommandContext(settings, Services(pipelines=mgr), user_id="U1", channel_id="C1"), backend, mgr


def _first_step(backend: FakeBackend) -> dict:
    return [c[1] for c in backend.calls if c[0] == "start_pipeline"][-1]["workflow_spec"]["steps"][0]


async def test_a_camera_rows_rotate_and_flip_apply_unless_the_start_says_otherwise(ctx) -> None:
    context, backend, mgr = ctx
    reply = await run_command("/vision start hall", context)
    assert reply.ok and "frames turned 270° clockwise and mirrored left-right" in reply.text, reply.text
    assert _first_step(backend) == {"type": ORIENT_BLOCK, "name": "orient", "image": "$inputs.image", "rotate": 270,
                                    "flip": "h"}
    reply = await run_command("/vision start hall rotate=0 flip=none name=plain", context)
    assert reply.ok and "turned" not in reply.text and _first_step(backend)["type"] != ORIENT_BLOCK
    reply = await run_command("/vision start gate", context)  # empty cells: as it comes
    assert reply.ok and _first_step(backend)["type"] != ORIENT_BLOCK


async def test_a_camera_row_whose_rotate_is_not_a_quarter_turn_is_refused_with_what_to_do(ctx) -> None:
    context, backend, _ = ctx
    reply = await run_command("/vision start attic", context)
    assert not reply.ok and "camera 'attic' has Rotate '45' in CAMERAS.md" in reply.text
    assert "fix its row, or give rotate= when you start it" in reply.text
    assert not [c for c in backend.calls if c[0] == "start_pipeline"]
    assert (await run_command("/vision start attic rotate=90", context)).ok  # the start's own setting stands


async def test_a_turned_rows_camera_under_a_saved_workflow_is_refused_with_what_to_do(ctx) -> None:
    context, _, _ = ctx
    reply = await run_command("/vision start hall workflow=ws/ppe", context)
    assert not reply.ok and "set to rotate=270 flip=h in CAMERAS.md" in reply.text and "rotate=0 flip=none" in reply.text


async def test_line_middle_is_the_middle_of_the_upright_frame(ctx, workspace_dir: Path) -> None:
    """A 240x300 clip turned a quarter is 300x240 upright: its vertical middle line is x=150, not x=120."""
    import cv2
    import numpy as np

    clip = workspace_dir / "tall.avi"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"MJPG"), 5, (240, 300))
    for _ in range(3):
        writer.write(np.zeros((300, 240, 3), np.uint8))
    writer.release()
    context, backend, _ = ctx
    reply = await run_command(f"/vision start {clip.name} line=middle rotate=90", context)
    assert reply.ok and "(150,0)→(150,240)" in reply.text, reply.text
    reply = await run_command(f"/vision start {clip.name} line=middle name=asis", context)
    assert reply.ok and "(120,0)→(120,300)" in reply.text, reply.text


async def test_the_setting_is_saved_and_a_restart_turns_the_frames_again(ctx, settings: Settings,
                                                                        workspace_dir: Path) -> None:
    context, backend, mgr = ctx
    assert (await run_command("/vision start gate rotate=180 line=10,0,10,50", context)).ok
    saved = load_state(workspace_dir / "active_state.json")
    assert [(c.rotate, c.flip) for c in saved] == [(180, None)]
    assert saved[0].workflow_spec["steps"][0]["type"] != ORIENT_BLOCK  # saved as composed: turned at each launch
    again = FakeBackend()
    await restore_all(PipelineManager(lambda: again, workspace_dir / "active_state.json", settings))
    step = [c[1] for c in again.calls if c[0] == "start_pipeline"][0]["workflow_spec"]["steps"][0]
    assert step["type"] == ORIENT_BLOCK and step["rotate"] == 180


async def test_a_saved_turn_that_is_no_setting_is_kept_aside_and_the_others_come_back(settings: Settings,
                                                                                     workspace_dir: Path) -> None:
    path = workspace_dir / "active_state.json"
    save_state(path, [PipelineConfig("pipe_a", "a", "rtsp://10.0.0.1/s", "builtin/people", rotate=90),
                      PipelineConfig("pipe_b", "b", "rtsp://10.0.0.2/s", "builtin/people")])
    data = json.loads(path.read_text())
    data["pipelines"][0]["rotate"] = 45  # edited by hand
    path.write_text(json.dumps(data))
    assert [c.name for c in load_state(path)] == ["b"]


# --- what is said ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("turn", "now", "fix"), [
    (90, None, "rotate=90"), (180, None, "rotate=180"), (270, None, "rotate=270"),
    (90, {"rotate": 90, "flip": None}, "rotate=180"), (270, {"rotate": 90, "flip": None}, "rotate=0"),
    (90, {"rotate": 0, "flip": "h"}, "rotate=270 flip=h"), (180, {"rotate": 90, "flip": "v"}, "rotate=270 flip=v"),
])
def test_a_turned_camera_is_named_with_the_setting_from_the_one_it_runs(turn, now, fix) -> None:
    values = {"camera": {"turned": turn, "person_px": None, "settled": False, "smallest_px": 24.0,
                         "blind_seconds": 300.0}, "orientation": now}
    line = turned(values)
    assert line is not None and f"restart it with {fix} (" in line
    assert ("upside down" if turn == 180 else "lying down") in line
    assert cannot_count(values) == line  # it explains the blindness: the "use a Roboflow model" line is not given
    if now is None:
        assert "the camera looks rotated" in line
    else:
        assert Orientation.from_output(now).words() in line  # what it runs with now, so the new setting makes sense


def test_an_upright_camera_or_a_still_says_nothing() -> None:
    assert turned({"camera": {"turned": None}}) is None and turned({}) is None and turned(None) is None
    assert turned({"camera": {"turned": 45}}) is None  # not a value the detector gives: nothing to advise


async def test_a_turned_camera_raises_one_health_alert_even_after_a_cannot_count_one(tmp_path: Path,
                                                                                   settings: Settings) -> None:
    clock = Clock()
    router, sink = make_router(tmp_path, clock, cooldown=60)
    pipes = FakePipelines()
    monitor = Monitor(router, pipes, settings, None, clock=clock, stall_seconds=30)
    monitor.start()
    measured = {"settled": True, "smallest_px": 24.0, "person_px": 40.0, "blind_seconds": 200.0}
    pipes.add("cam1", started_at=clock())
    pipes.push("cam1", result(camera={**measured, "turned": None}))
    await monitor.check_health()
    pipes.push("cam1", result(camera={**measured, "turned": 180}))
    await monitor.check_health()
    await monitor.check_health()
    assert [a.rule for a in sink.alerts] == ["cannot_count", "camera_turned"]
    assert "cam1: people appear upside down" in sink.alerts[1].text and "rotate=180" in sink.alerts[1].text
    assert event_type_of("camera_turned") == "health"

"""What a pipeline counted so far shows in every status line, and a file that runs out says its totals once."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.backends.base import Detection, InferenceResult
from bot.commands.dispatch import CommandContext, run_command
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.pipelines.tally import Ended, Origin
from bot.services import Services
from tests.tools.fake_backend import FakeBackend, result


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def manager(settings, workspace_dir: Path, backend) -> PipelineManager:
    return PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)


def _ctx(settings, manager: PipelineManager) -> CommandContext:
    return CommandContext(settings, Services(pipelines=manager), "cli", "cli", operator=True)


def _zone_result(dwell: dict[int, float]) -> InferenceResult:
    dets = tuple(Detection("person", 0.9, (0, 0, 5, 5), tracker_id=t, time_in_zone=s) for t, s in dwell.items())
    return InferenceResult(dets, {}, None, 1)


@pytest.mark.parametrize(("crossings", "expected"), [([(0, 0)], "in 0 / out 0"), ([(1, 0), (4, 2)], "in 4 / out 2"),
                                                     ([(3, 1), (250, 199)], "in 250 / out 199")])
async def test_list_and_status_show_the_line_totals_so_far(settings, workspace_dir, manager, backend, crossings,
                                                           expected):
    video = workspace_dir / "walk.mp4"
    video.write_bytes(b"x")
    reply = await run_command(f"start {video} line=0,5,9,5 name=walk", _ctx(settings, manager))
    assert reply.ok, reply.text
    pid = manager.resolve("walk").pipeline_id
    for n, (cin, cout) in enumerate(crossings):
        backend.emit(pid, result({"person": 1}, frame_id=n, line_counter_count_in=cin, line_counter_count_out=cout))
    for verb in ("list", "status"):
        text = (await run_command(verb, _ctx(settings, manager))).text
        assert f"counted {expected}" in text, text
        assert "visualization" not in text and "counting line (0,5)→(9,5)" in text  # the model and line, once


async def test_zone_dwell_figures_count_each_object_once_and_keep_the_longest(settings, manager, backend):
    handle = await manager.start(StartRequest(
        "rtsp://cam/1", name="door", model_id="builtin/people"))
    for dwell in ({1: 0.0, 2: 3.0}, {1: 2.0, 2: 9.5, 3: 0.0}, {2: 0.0, 3: 1.0}):
        backend.emit(handle.pipeline_id, _zone_result(dwell))
    text = (await run_command("list", _ctx(settings, manager))).text
    assert "zone: 1 in it now, 3 entered, longest 10 s" in text
    plain = (await run_command("list", _ctx(settings, manager))).text
    assert "counted in" not in plain  # no line: no in/out figures made up


async def test_a_file_that_runs_out_is_told_once_with_its_totals_and_where_it_was_started(
    settings, workspace_dir, manager, backend
):
    video = workspace_dir / "walk.mp4"
    video.write_bytes(b"x")
    told: list[Ended] = []
    manager.add_end_listener(told.append)
    origin = Origin("slack:T1:C1:111.2", "U1", "C1")
    ctx = CommandContext(settings, Services(pipelines=manager), "U1", "C1", session_key=origin.session_key)
    assert (await run_command(f"start {video} line=0,5,9,5 name=walk", ctx)).ok
    camera = await manager.start(StartRequest(
        "rtsp://cam/1", name="door", model_id="builtin/people"))
    pid = manager.resolve("walk").pipeline_id
    for n in range(7):
        backend.emit(pid, result({"person": 1}, frame_id=n, count_in=n // 2, count_out=n // 3))
    await manager.list()
    assert told == []  # still running
    for p in (pid, camera.pipeline_id):
        backend.handles[p] = backend.handles[p].with_(status="finished")
    await manager.list()
    await manager.status("walk")
    assert len(told) == 1  # once; and a stream that ends is a health alert, not "the file ran out"
    line = told[0].line()
    assert line == "walk finished (the file ran out after 7 frames): counted in 3 / out 2."
    assert told[0].origin == Origin("slack:T1:C1:111.2", "U1", "C1")

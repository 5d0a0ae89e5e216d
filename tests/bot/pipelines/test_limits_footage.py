"""The product says when it cannot count: real footage through `/vision start` and `/vision status`.

People too small for builtin/people (the committed 384x288 sub-stream scaled down until people are ~20-25 px tall,
made here) get the "cannot count reliably" line with what to do; the sub-stream itself, which counts within a fifth
of by eye (tests/bot/backends/test_envelope_footage.py), does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.commands.dispatch import CommandContext, run_command
from bot.config import Settings
from bot.monitoring.alerts import AlertRouter
from bot.pipelines.manager import PipelineManager
from bot.services import Services
from tests.bot.monitor_helpers import run_to_end

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"
pytestmark = pytest.mark.slow


def scaled_copy(src: Path, dst: Path, scale: float) -> list[list[int]]:
    """src resized by `scale` (x264, as the committed clips), and its by-eye counting line moved with it."""
    import av
    import cv2

    cap = cv2.VideoCapture(str(src))
    fps = cap.get(cv2.CAP_PROP_FPS)
    frames = []
    while (got := cap.read())[0]:
        frames.append(cv2.resize(got[1], None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA))
    cap.release()
    height, width = frames[0].shape[:2]
    with av.open(str(dst), mode="w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=round(fps), options={"crf": "23"})
        stream.width, stream.height, stream.pix_fmt = width - width % 2, height - height % 2, "yuv420p"
        for frame in frames:
            even = frame[: stream.height, : stream.width]
            out.mux(stream.encode(av.VideoFrame.from_ndarray(even, format="bgr24")))
        out.mux(stream.encode(None))
    line = json.loads((src.with_suffix(".json")).read_text())["line"]
    return [[round(x * scale), min(round(y * scale), stream.height)] for x, y in line]


async def _status_after_run(direct_backend, workspace_dir: Path, settings: Settings, clip: Path,
                            line: list[list[int]], name: str = "walkway",
                            on_result: Callable[[Any, Any], None] | None = None,
                            timeout: float = 600) -> tuple[str, str]:
    """(`/vision start` reply, `/vision status` reply once the clip has been counted to its end); `on_result` sees
    each of the pipeline's results."""
    router = AlertRouter(workspace_dir / ".state" / "alerts.json", default_channel="#general")
    mgr = PipelineManager(lambda: direct_backend, workspace_dir / "active_state.json", settings)
    if on_result is not None:
        mgr.add_result_listener(on_result)
    ctx = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U1", channel_id="C1")
    (x1, y1), (x2, y2) = line
    try:
        started = await run_command(f"/vision start {clip.name} name={name} line={x1},{y1},{x2},{y2}", ctx)
        assert started.ok, started.text
        await run_to_end(mgr, name, timeout=timeout)  # a hang guard only: a busy machine is slow, not wrong
        status = await run_command("/vision status", ctx)
    finally:
        await mgr.stop_all()
    assert mgr.resolve(name).status == "finished"
    return started.text, status.text


async def test_people_too_small_to_find_are_named_in_status_with_what_to_do(
    direct_backend, workspace_dir: Path, settings: Settings
) -> None:
    clip = workspace_dir / "far.mp4"
    line = scaled_copy(DATA / "substream_5fps.mp4", clip, 0.6)  # 230x173: people ~18-60 px, most ~24
    _, status = await _status_after_run(direct_backend, workspace_dir, settings, clip, line)
    walkway = next(line for line in status.splitlines() if "walkway" in line)
    assert "cannot count reliably: people here are about" in walkway, status
    assert "use the main stream" in walkway and "Roboflow model" in walkway


async def test_a_substream_the_detector_handles_gets_no_warning(
    direct_backend, workspace_dir: Path, settings: Settings
) -> None:
    clip = workspace_dir / "sub.mp4"
    clip.write_bytes((DATA / "substream_5fps.mp4").read_bytes())
    line = json.loads((DATA / "substream_5fps.json").read_text())["line"]
    started, status = await _status_after_run(direct_backend, workspace_dir, settings, clip, line)
    assert "walkway" in status and "cannot count" not in status + started, status

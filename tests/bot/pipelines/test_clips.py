"""Event clips: the per-pipeline ring buffer's bounds, an alert from a real pipeline carrying a playable clip, and
the model looking at the seconds before the event through get_clip_frames."""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from bot.agent.tools import ToolContext
from bot.backends.base import InferenceResult, PipelineHandle
from bot.config import Settings, load_settings
from bot.media.clip_video import encode_clip
from bot.monitoring.monitor import Monitor
from bot.pipelines.clips import ClipRecorder, FrameRing
from bot.pipelines.request import StartRequest
from bot.services import Services
from tests.bot.monitor_helpers import RecordingSink, make_router, run_to_end
from tools import build_registry


def jpeg_of(i: int, size: tuple[int, int] = (320, 240), noise: bool = False) -> bytes:
    w, h = size
    rng = np.random.default_rng(i)
    im = rng.integers(0, 255, (h, w, 3), np.uint8) if noise else np.full((h, w, 3), 90, np.uint8)
    cv2.circle(im, (10 + (i * 7) % (w - 20), h // 2), 12, (0, 0, 255), -1)
    return cv2.imencode(".jpg", im)[1].tobytes()


def test_ring_keeps_at_most_fps_frames_per_second_for_its_seconds_and_within_its_bytes() -> None:
    ring = FrameRing(seconds=4.0, fps=5.0, max_bytes=10**9)
    kept = sum(ring.push(t / 30, jpeg_of(t)) for t in range(30 * 10))  # 10 s at 30 fps
    assert 48 <= kept <= 51  # every 6th frame: 5 per second
    assert 19 <= len(ring) <= 21  # only the last 4 s stay
    noisy = [jpeg_of(i, noise=True) for i in range(40)]  # ~60 KB each
    small = FrameRing(seconds=60.0, fps=30.0, max_bytes=200_000)
    for i, j in enumerate(noisy):
        small.push(i / 30, j)
        assert small.bytes <= 200_000 and small.bytes == sum(len(f.jpeg) for f in small.between(0, 99))
    assert 0 < len(small) < 40 and small.between(0, 99)[-1].jpeg is noisy[-1]  # the oldest went first
    assert small.short_by_bytes and not ring.short_by_bytes  # what the operator is warned about


def test_a_clip_over_its_size_bound_is_re_encoded_smaller_or_not_kept(tmp_path: Path) -> None:
    noisy = [jpeg_of(i, size=(640, 480), noise=True) for i in range(30)]
    big = encode_clip(noisy, 5.0, 50 * 1024 * 1024, tmp_path / "big.mp4")
    assert big is not None and big.codec == "h264" and big.frames == 30
    bound = big.bytes // 3
    small = encode_clip(noisy, 5.0, bound, tmp_path / "small.mp4")
    if small is not None:  # a lower rate and quality fit
        assert small.bytes <= bound and small.path.stat().st_size == small.bytes
        assert small.frames < 30 or small.bytes < big.bytes
    else:
        assert not (tmp_path / "small.mp4").exists()


@pytest.fixture
def clip_settings(tmp_path: Path, base_env: dict[str, str]) -> Settings:
    return load_settings(base_env, workspace=str(tmp_path), clips={
        "seconds_before": 2.0, "seconds_after": 1.5, "fps": 5.0, "buffer_bytes": 1_500_000,
    })


def _frame_diff(a: np.ndarray, b: np.ndarray) -> float:
    b = cv2.resize(b, (a.shape[1], a.shape[0]))
    return float(np.mean(cv2.absdiff(a, b)))


@pytest.mark.slow
async def test_real_pipeline_alert_carries_a_playable_clip_of_the_event(
    direct_backend, tmp_path: Path, clip_settings: Settings
) -> None:
    """Two faces cross the line on a real-time 15 fps video; the line alert gets an H.264 clip of ~2 s before
    to 1.5 s after, whose frame at the event is the alert's frame, and the ring never held more than its bound."""
    from bot.backends.workflows import detection_workflow
    from bot.pipelines.manager import PipelineManager
    from tests.fixtures.inference import crossing_line, make_video

    router, posted = make_router(tmp_path, time.time, cooldown=300)
    router.add_clip_sink(sink := RecordingSink())  # the clip follows its alert
    mgr = PipelineManager(lambda: direct_backend, tmp_path / "active_state.json", clip_settings)
    monitor = Monitor(router, mgr, clip_settings, clips=mgr.clips)
    monitor.start()
    held: list[int] = []
    mgr.add_result_listener(lambda h, r: held.append(mgr.clips.buffer_bytes(h.pipeline_id)))
    video = make_video(tmp_path / "door.mp4", frames=75, fps=15, hold=20)
    try:  # max_fps = the video's rate: the file plays in real time, as a camera would
        await mgr.start(StartRequest(str(video), "door", workflow_spec=detection_workflow("builtin/faces", line=crossing_line()),
                        max_fps=15))
        await run_to_end(mgr, "door")
        await monitor.flush()
    finally:
        await mgr.stop_all()
    [alert] = [a for a in sink.alerts if a.rule == "line_crossed"]
    assert alert.clip_path and Path(alert.clip_path).parent == tmp_path / "clips"
    [first] = [a for a in posted.alerts if a.alert_id == alert.alert_id]
    assert first.clip_path is None, "the alert went out before its clip was cut"
    assert held and max(held) <= 1_500_000, f"ring held {max(held)} bytes"
    cap = cv2.VideoCapture(alert.clip_path)
    fps, count = cap.get(cv2.CAP_PROP_FPS), int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
    frames = []
    while (got := cap.read())[0]:
        frames.append(got[1])
    cap.release()
    assert len(frames) == count >= 5, "the clip must decode"
    assert 1.0 <= count / fps <= 2.0 + 1.5 + 2 / fps, f"{count} frames at {fps} fps"
    clip = mgr.clips.find(Path(alert.clip_path).stem)
    assert clip is not None and clip.codec == "h264" and 1.0 <= clip.event_at <= 2.0 + 2 / fps  # a frame late either side (frames come unevenly under load)
    event = cv2.imdecode(np.frombuffer(alert.frame or b"", np.uint8), cv2.IMREAD_COLOR)
    diffs = [_frame_diff(event, f) for f in frames]
    match = diffs.index(min(diffs))
    at_event = frames[match]
    assert diffs[match] < 6, "the alert's own frame is in the clip"
    assert abs(match - clip.event_at * fps) <= 1.5, "where the clip says the event is"
    assert _frame_diff(event, frames[0]) > 2 * _frame_diff(event, at_event), "the faces move during the clip"
    print(f"\nclip {clip.bytes} B, {count} frames at {fps} fps, event at {clip.event_at} s; ring max {max(held)} B")

    ctx = ToolContext(settings=clip_settings, services=Services(pipelines=mgr))
    before = await build_registry().execute("get_clip_frames", {"clip": clip.clip_id, "start": -10, "end": 0}, ctx)
    assert not before.is_error and before.image and before.image.startswith(b"\xff\xd8")
    assert "less than asked" in before.text and f"-{clip.event_at:.1f} s" in before.text
    escape = await build_registry().execute("get_clip_frames", {"clip": "../active_state"}, ctx)
    assert escape.is_error and "No clip" in escape.text


async def test_clips_follow_the_bots_clock_and_an_ended_pipeline_lets_its_frames_go(tmp_path: Path) -> None:
    now = [100.0]
    cfg = load_settings({}, workspace=str(tmp_path)).clips
    rec = ClipRecorder(cfg.model_copy(update={"seconds_before": 1.0, "seconds_after": 0.0}), tmp_path, lambda: now[0])
    handle = PipelineHandle("p1", "cam", "direct", "v.mp4", "", 0.0, "running")
    for i in range(20):
        now[0] = 100.0 + i * 0.2
        rec.on_result(handle, InferenceResult(frame=jpeg_of(i)))
    mark = rec.mark("p1", jpeg_of(99))
    assert mark is not None and rec.frames("p1", mark - 1.0, mark)[-1].jpeg == jpeg_of(99)
    clip = await rec.record("p1", mark, "cam/../x", "class_appears")
    assert clip is not None and clip.path.parent == tmp_path and ".." not in clip.path.name
    assert clip.frames >= 5 and rec.find(clip.clip_id) == clip
    now[0] += 120  # a new pipeline's first frame lets the silent one's ring go
    rec.on_result(handle.with_(pipeline_id="p2"), InferenceResult(frame=jpeg_of(1)))
    assert rec.buffer_bytes("p1") == 0 and rec.buffer_bytes("p2") > 0

"""Cameras at night, in IR and through a cheap sensor's noise, on real footage: counted like the lit street, or the
product says the light is too poor to count and what would help (bot/backends/builtin/light.py,
bot/pipelines/limits.py).

The clips are the committed sub-stream street clips (tests/fixtures/data, crossings counted by eye) made dark / grey
/ noisy here by bench/_light.py on a sensor picture twice their size, scaled back as a camera makes its sub-stream,
and encoded again with x264 as a camera would. Before: a noisy night counted 0 of 37 crossings
on the full street (23 on its sub-stream) with nothing said; see the envelope bench's light rows for the range.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench._light import Light, derive
from bot.config import Settings
from tests.bot.pipelines.test_limits_footage import _status_after_run

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "data"
pytestmark = pytest.mark.slow


def looped(clip: Path, times: int, dst: Path) -> Path:
    """`clip` played `times` over, as one file (a camera watched for minutes)."""
    import av

    with av.open(str(clip)) as src:
        stream_in = src.streams.video[0]
        rate = stream_in.average_rate
        frames = [f.to_ndarray(format="bgr24") for f in src.decode(stream_in)]
    height, width = frames[0].shape[:2]
    with av.open(str(dst), mode="w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=rate, options={"crf": "20"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for _ in range(times):
            for frame in frames:
                out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="bgr24")))
        out.mux(stream.encode(None))
    return dst


async def _run(direct_backend, workspace_dir: Path, settings: Settings, clip: Path,
               line: list[list[int]]) -> tuple[int, str]:
    """(crossings counted, the pipeline's `/vision status` line) after `/vision start clip line=…` ran to its end."""
    counts: list[int] = []
    _, status = await _status_after_run(
        direct_backend, workspace_dir, settings, clip, line, name="night", timeout=900,
        on_result=lambda h, r: counts.append(int(r.values.get("count_in") or 0) + int(r.values.get("count_out") or 0)))
    assert counts
    return counts[-1], next(x for x in status.splitlines() if "night" in x)


# Points of the range the issue does not name: a moderate night through a mid sensor at 5 fps, a noisy IR picture
# at 2 fps, a dim dusk with a cheap sensor's noise.
@pytest.mark.parametrize(("name", "light"), [
    ("substream_5fps", Light("night, mid sensor", dark=1.3, noise=0.6)),
    ("street_2fps", Light("ir, noisy", ir=1.4, noise=0.5)),
    ("substream_5fps", Light("dusk, noisy", dark=0.6, noise=0.8)),
])
async def test_a_night_ir_or_noisy_camera_counts_within_a_fifth_of_by_eye_and_says_nothing(
        direct_backend, workspace_dir: Path, settings: Settings, name: str, light: Light) -> None:
    expected = json.loads((DATA / f"{name}.json").read_text())
    clip = derive(DATA / f"{name}.mp4", light, workspace_dir / f"{name}-dark.mp4", sensor=2)
    counted, status = await _run(direct_backend, workspace_dir, settings, clip, expected["line"])
    assert abs(counted - expected["crossings"]) <= 0.2 * expected["crossings"], (counted, expected["crossings"])
    assert "cannot count" not in status, status


async def test_a_picture_too_dark_and_noisy_to_see_anyone_says_so_with_what_would_help(
        direct_backend, workspace_dir: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.pipelines import limits

    # The product waits BLIND_SECONDS (2 min) of people-shaped motion mostly unseen before it says so; the suite
    # shortens that to 40 s of video, so the 42 s clip looped twice is enough (3.5 min of it took 200 s of the
    # suite). The 2-minute rule itself: tests/bot/pipelines/test_limits.py.
    monkeypatch.setattr(limits, "BLIND_SECONDS", 40.0)
    expected = json.loads((DATA / "street_2fps.json").read_text())
    dark = derive(DATA / "street_2fps.mp4", Light("black night, poor sensor", dark=2.3, noise=1.8),
                  workspace_dir / "dark.mp4", sensor=2)
    clip = looped(dark, 2, workspace_dir / "dark2.mp4")
    _, status = await _run(direct_backend, workspace_dir, settings, clip, expected["line"])
    assert "cannot count reliably: the light is too poor to find people" in status, status
    assert "IR illuminator" in status and "main stream" in status and "Roboflow model" in status

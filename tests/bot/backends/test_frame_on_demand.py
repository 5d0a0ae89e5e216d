"""A pipeline's frames are drawn and JPEG-encoded only when someone will see them (LazyJpeg counts each one made)."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.backends.base import InferenceResult, LazyJpeg, WorkflowRef
from bot.backends.convert import from_workflow_output
from bot.config.sections import ClipsConfig
from bot.pipelines.clips import ClipRecorder
from tests.fakes.waits import patience
from tests.fixtures.inference import REPO, astronaut_bgr

STREET = REPO / "tests" / "fixtures" / "data" / "crossing.mp4"  # real footage: vtest.avi's street, 5 fps, 34 frames


async def _finished(backend, pipeline_id: str) -> None:
    deadline = time.monotonic() + patience(120)
    while (await backend.get_pipeline_status(pipeline_id)).status in ("starting", "running"):
        assert time.monotonic() < deadline, "the pipeline did not finish"
        await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_a_pipeline_nobody_looks_at_encodes_no_frame_until_the_latest_is_asked_for(direct_backend):
    seen: list[InferenceResult] = []
    made = LazyJpeg.made
    await direct_backend.start_pipeline("lazy-1", "street", str(STREET), WorkflowRef(model_id="builtin/people"),
                                        on_result=lambda handle, result: seen.append(result))
    await _finished(direct_backend, "lazy-1")
    assert len(seen) >= 10 and LazyJpeg.made == made  # every frame ran, none was drawn or encoded
    latest = direct_backend.latest_result("lazy-1")
    assert latest is seen[-1] and (latest.frame or b"").startswith(b"\xff\xd8")  # asked for: a JPEG
    assert LazyJpeg.made == made + 1
    assert seen[0].frame is None  # superseded unread: its pixels were let go, so it never will be
    assert LazyJpeg.made == made + 1


def test_clips_encode_only_the_frames_their_rate_keeps():
    """20 results a second into a 5 fps clip buffer: only the kept ones are drawn and encoded."""
    image, now = astronaut_bgr(), [0.0]
    clips = ClipRecorder(ClipsConfig(fps=5.0), REPO / "unused", clock=lambda: now[0])
    made = LazyJpeg.made
    for i in range(40):  # two seconds of a 20 fps camera
        now[0] = i * 0.05
        clips.on_result(_handle(), from_workflow_output({}, source_image=image, frame_id=i))
    kept = clips.frames("p1", 0.0, 2.0)
    assert 9 <= len(kept) <= 11 and LazyJpeg.made - made == len(kept)
    assert all(f.jpeg.startswith(b"\xff\xd8") for f in kept)


def _handle():
    from bot.backends.base import PipelineHandle

    return PipelineHandle("p1", "door", "direct", "cam.mp4", "builtin/people", 0.0, "running")

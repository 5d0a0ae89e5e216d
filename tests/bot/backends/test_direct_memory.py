"""What each direct camera holds: frames queued within monitoring.frame_buffer_bytes, one model manager for all."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import tracemalloc
from collections.abc import Callable

import pytest

from bot.backends.base import WorkflowRef
from bot.backends.direct.frames import FRAMES_PER_DEPTH, queue_depth
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video

pytestmark = pytest.mark.slow
FRAME = 640 * 480 * 3
IN_FLIGHT = 6  # frames outside the queues: being decoded, in inference and delivered (each with its drawn copy)


def _settled(sample: Callable[[], int], timeout: float) -> int:
    """sample() once it stops growing by a frame over three looks half a second apart (or the timeout passes)."""
    deadline, seen = time.monotonic() + patience(timeout), [sample()]
    while time.monotonic() < deadline:
        time.sleep(0.5)
        seen.append(sample())
        if len(seen) >= 4 and max(seen[-4:]) - min(seen[-4:]) < FRAME:
            break
    return seen[-1]


async def test_each_added_camera_whose_results_wait_holds_only_its_frame_budget(direct_backend, tmp_path):
    """Cameras whose listener is stuck: each added one holds at most frame_buffer_bytes of queued frames.

    Before the budget, InferencePipeline queued 64 decoded frames and 512 results a camera: a stuck listener grew
    each camera by the whole 400-frame file (~370 MB).
    """
    video = make_video(tmp_path / "long.mp4", frames=400, fps=30)
    budget = direct_backend._settings.monitoring.frame_buffer_bytes
    assert queue_depth(budget, str(video)) * FRAMES_PER_DEPTH * FRAME <= budget
    stuck, delivered = threading.Event(), threading.Semaphore(0)

    def wait_here(handle, result) -> None:
        delivered.release()
        stuck.wait(patience(120))

    async def start(names: list[str]) -> int:
        for name in names:
            await direct_backend.start_pipeline(name, name, str(video), WorkflowRef(model_id="builtin/people"),
                                                on_result=wait_here)
        for _ in names:
            assert await asyncio.to_thread(delivered.acquire, True, patience(120))
        return await asyncio.to_thread(_settled, lambda: tracemalloc.get_traced_memory()[0], 60)

    names = [f"mem-{i}" for i in range(3)]
    tracemalloc.start(1)
    try:
        first = await start(names[:1])  # imports, blocks and the engine are loaded by the first camera
        added = (await start(names[1:]) - first) / 2
    finally:
        tracemalloc.stop()
        stuck.set()
        for name in names:
            await direct_backend.stop_pipeline(name)
    bound = budget + IN_FLIGHT * FRAME + 4 * 1024 * 1024  # + the pipeline's threads, engine and detector objects
    assert added <= bound, f"each added stuck camera held {added / 1e6:.1f} MB (bound {bound / 1e6:.1f} MB)"


async def test_cameras_share_one_model_manager(direct_backend, face_video):
    """Every pipeline's engine loads models through the backend's one model manager: a model used by three cameras
    is loaded once (Roboflow weights are the part of a camera that costs hundreds of MB)."""
    from inference.core.managers.base import ModelManager
    from inference.core.managers.decorators.base import ModelManagerDecorator

    def is_manager(kind: type) -> bool:  # a manager that holds models, not a wrapper (cache) around one
        return issubclass(kind, ModelManager) and not issubclass(kind, ModelManagerDecorator)

    names = [f"share-{i}" for i in range(3)]
    for name in names:
        await direct_backend.start_pipeline(name, name, str(face_video), WorkflowRef(model_id="builtin/faces"), max_fps=5)
    try:
        gc.collect()
        managers = [o for o in gc.get_objects() if is_manager(type(o))]  # type(): a lazy proxy raises on __class__
        running = [await direct_backend.get_pipeline_status(name) for name in names]
    finally:
        for name in names:
            await direct_backend.stop_pipeline(name)
    assert all(h.status in ("running", "finished") for h in running), running
    assert len(managers) == 1, managers


async def test_a_full_hd_file_whose_frames_fill_the_budget_still_stops_when_asked(direct_backend, tmp_path):
    """At 1920x1080 one frame is most of the 8 MB budget; one-frame queues made InferencePipeline's stop hang for
    good (the event loop with it), so no pipeline gets under MIN_DEPTH whatever its frames weigh."""
    video = make_video(tmp_path / "hd.mp4", size=(1920, 1080), frames=120, fps=10)
    assert queue_depth(direct_backend._settings.monitoring.frame_buffer_bytes, str(video)) >= 2
    delivered = threading.Semaphore(0)
    await direct_backend.start_pipeline("hd", "hd", str(video), WorkflowRef(model_id="builtin/motion"), max_fps=5,
                                        on_result=lambda handle, result: delivered.release())
    for _ in range(2):
        assert await asyncio.to_thread(delivered.acquire, True, patience(120))
    # A stop that hangs blocks the event loop too: pytest's timeout (pyproject) is what fails it then.
    await asyncio.wait_for(direct_backend.stop_pipeline("hd"), patience(60))

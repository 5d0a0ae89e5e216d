"""FPS of the agent's direct pipeline vs a bare InferencePipeline, same generated video and workflow, side by side.

Quick mode: a shorter video (QUICK_FRAMES) and one round, through the same two pipelines.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

FRAMES = 240
ROUNDS = 3  # alternating bare / direct so load drift hits both alike
QUICK_FRAMES, QUICK_ROUNDS = 30, 1
GOAL = ">= 95%"


def _spec() -> dict:
    from bot.backends.workflows import detection_workflow
    from tests.fixtures.inference import crossing_line

    return detection_workflow("builtin/faces", line=crossing_line())


def run_bare(video: Path, spec: dict, model_manager: object, keep: list | None = None) -> tuple[float, int]:
    """A bare InferencePipeline with a do-nothing sink: fps between its first and last prediction."""
    from inference.core.interfaces.legacy_stream.inference_pipeline import InferencePipeline

    stamps: list[float] = []

    def sink(predictions: dict, frame: object) -> None:
        stamps.append(time.perf_counter())
        if keep is not None and len(keep) < 50:
            keep.append((predictions, frame))

    pipeline = InferencePipeline.init_with_workflow(
        video_reference=str(video),
        workflow_specification=spec,
        on_prediction=sink,
        model_manager=model_manager,
    )
    pipeline.start(use_main_thread=False)
    pipeline.join()
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps)


async def run_direct(backend: Any, video: Path, spec: dict, n: int) -> tuple[float, int]:
    """The agent's DirectBackend pipeline (conversion, JPEG frames, buffer, listener): same fps measure."""
    stamps: list[float] = []
    pid = f"bench-{n}"
    from bot.backends.base import WorkflowRef

    await backend.start_pipeline(pid, "bench", str(video), WorkflowRef(workflow_spec=spec),
                                 on_result=lambda h, r: stamps.append(time.perf_counter()))
    while (await backend.get_pipeline_status(pid)).status in ("starting", "running"):
        await asyncio.sleep(0.05)
    await backend.stop_pipeline(pid)
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps)


def _conversion_ms(kept: list) -> float:
    from bot.backends.convert import from_workflow_output

    start = time.perf_counter()
    for predictions, frame in kept:
        from_workflow_output(predictions, source_image=frame.image, frame_id=frame.frame_id, max_dimension=640)
    return (time.perf_counter() - start) * 1000 / max(len(kept), 1)


async def _main(frames: int, rounds: int) -> float:
    """Print the rounds and the medians; return direct / bare."""
    from bot.backends.direct.backend import DirectBackend
    from bot.config import load_settings
    from tests.fixtures.inference import make_video

    with tempfile.TemporaryDirectory() as tmp:
        video = make_video(Path(tmp) / "bench.mp4", frames=frames)
        backend = DirectBackend(load_settings({"VISION_AGENT_WORKSPACE": tmp, "VISION_AGENT_HEARTBEAT_MINUTES": "0"}))
        runtime = await asyncio.to_thread(backend.runtime)
        spec = _spec()
        kept: list = []
        await asyncio.to_thread(run_bare, video, spec, runtime.model_manager, kept)  # warm-up: imports, compile
        convert_ms = _conversion_ms(kept)
        bare, direct = [], []
        for i in range(rounds):
            fps, n_bare = await asyncio.to_thread(run_bare, video, spec, runtime.model_manager)
            bare.append(fps)
            fps, n_direct = await run_direct(backend, video, spec, i)
            direct.append(fps)
            print(f"round {i + 1}: bare {bare[-1]:6.1f} fps ({n_bare} frames)   direct {direct[-1]:6.1f} fps ({n_direct} frames)")
        b, d = statistics.median(bare), statistics.median(direct)
        print(f"median fps: bare InferencePipeline {b:.1f}, agent DirectBackend {d:.1f}")
        print(f"direct / bare = {d / b:.1%} (goal {GOAL})")
        print(f"conversion per frame (detections + JPEG of the annotated frame): {convert_ms:.2f} ms "
              f"= {convert_ms * b / 10:.1f}% of a frame at the bare rate (runs on the dispatch thread, beside inference)")
        await backend.close()
    return d / b


def main(quick: bool = False) -> Headline:
    ratio = asyncio.run(_main(QUICK_FRAMES, QUICK_ROUNDS) if quick else _main(FRAMES, ROUNDS))
    return Headline(f"direct/bare {ratio:.0%}", GOAL, ratio >= 0.95)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])

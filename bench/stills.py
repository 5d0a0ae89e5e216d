"""builtin/people on a still, by size: people found per labelled still before vs now vs the pipeline, and seconds per
still from 160 px to 40 MP.

Recall: vtest.avi's 10 labelled frames (768x576 street CCTV, bench/data/vtest_people.json; people under 60 px there are
not counted) at 0.25x-2x, each run as a still (the block without video metadata) and by the pipeline path (the same
block fed the clip at 5 fps as video: it measures people's height from what moves). Before: the still as main ran it
(min_height 64, i.e. a 1.5x upscale capped at max_side, and run_inference's confidence 0.4). Time: one still through
the direct backend's run_single (decode under media.max_pixels, the workflow, the drawn and encoded frame), one core.
Quick mode (no download): the committed street band (street.jpg) at 0.5x-2x and the time at 160 and 640 px.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

SCALES = (0.25, 0.5, 1.0, 2.0)
BEFORE = {"min_height": 64, "confidence": 0.4}  # main's still: the block's old default, run_inference's old floor
SIZES = {"160 px": (160, 120), "640 px": (640, 480), "12 MP": (4000, 3000), "40 MP": (7296, 5472)}
GOAL = "a still finds what the pipeline finds on the same frames (within 1 per frame), 40 MP in under 30 s"


def _image(frame: Any, video: str | None = None, k: int = 0) -> Any:
    from inference.core.workflows.execution_engine.entities.base import (
        ImageParentMetadata,
        VideoMetadata,
        WorkflowImageData,
    )

    meta = None if video is None else VideoMetadata(
        video_identifier=video, frame_number=k, frame_timestamp=datetime.fromtimestamp(k / 5), fps=5.0,
        comes_from_video_file=True)
    return WorkflowImageData(parent_metadata=ImageParentMetadata(parent_id="bench"), numpy_image=frame,
                             video_metadata=meta)


def _found(block: Any, image: Any, **overrides: Any) -> list[tuple[float, float, float, float]]:
    from bot.backends.builtin.people import HogPeopleManifest

    fields = HogPeopleManifest.model_fields
    params = {k: f.default for k, f in fields.items() if k not in ("type", "name", "images")} | overrides
    return [tuple(map(float, b)) for b in block.run(images=image, **params)["predictions"].xyxy]


def _scaled(truth: Any, s: float) -> Any:
    from bench._realdata import Truth

    return Truth([tuple(c * s for c in b) for b in truth.boxes], [tuple(c * s for c in b) for b in truth.ignored])


def recall_rows(frames: dict[int, Any], labels: dict[int, Any], video: Path | None) -> dict[float, dict[str, int]]:
    """People found (IoU 0.5) per scale: before, now and (given the clip) the pipeline path."""
    import cv2

    from bench._realdata import match
    from bot.backends.builtin.people import HogPeopleDetectorBlockV1

    rows: dict[float, dict[str, int]] = {}
    for s in SCALES:
        resample = cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR
        block, tally = HogPeopleDetectorBlockV1(), {"labelled": 0, "before": 0, "now": 0, "pipeline": 0}
        for k, frame in frames.items():
            image, truth = _image(cv2.resize(frame, None, fx=s, fy=s, interpolation=resample)), _scaled(labels[k], s)
            tally["labelled"] += len(truth.boxes)
            tally["before"] += match(_found(block, image, **BEFORE), truth)[0]
            tally["now"] += match(_found(block, image), truth)[0]
        if video is not None:
            tally["pipeline"] = _pipeline(video, frames, labels, s)
        rows[s] = tally
    return rows


def _pipeline(video: Path, frames: dict[int, Any], labels: dict[int, Any], s: float) -> int:
    """People found on the labelled frames by the block fed the clip as video at 5 fps (as the sub-stream fixtures)."""
    import cv2

    from bench._realdata import match
    from bot.backends.builtin.people import HogPeopleDetectorBlockV1

    block, cap, k, found = HogPeopleDetectorBlockV1(), cv2.VideoCapture(str(video)), 0, 0
    resample = cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR
    try:
        while k <= max(frames):
            ok, frame = cap.read()
            if not ok:
                break
            if k % 2 == 0:
                boxes = _found(block, _image(cv2.resize(frame, None, fx=s, fy=s, interpolation=resample), "cam", k // 2))
                if k in frames:
                    found += match(boxes, _scaled(labels[k], s))[0]
            k += 1
    finally:
        cap.release()
    return found


def seconds_per_still(source: Any, sizes: dict[str, tuple[int, int]]) -> dict[str, tuple[float, int]]:
    """(seconds, people found) for one still of each size through DirectBackend.run_single (a JPEG, as sent)."""
    import cv2

    from bot.backends.direct.backend import DirectBackend
    from bot.config import load_settings

    out = {}
    with tempfile.TemporaryDirectory() as ws:
        backend = DirectBackend(load_settings({"VISION_AGENT_WORKSPACE": ws, "VISION_AGENT_HEARTBEAT_MINUTES": "0"}))
        asyncio.run(backend.run_single(cv2.imencode(".jpg", source)[1].tobytes(), model_id="builtin/people"))  # load
        for name, (w, h) in sizes.items():
            jpeg = cv2.imencode(".jpg", cv2.resize(source, (w, h), interpolation=cv2.INTER_LINEAR))[1].tobytes()
            start = time.perf_counter()
            result = asyncio.run(backend.run_single(jpeg, model_id="builtin/people"))
            result.frame  # noqa: B018 - the drawn JPEG is part of a still's answer
            out[name] = (time.perf_counter() - start, len(result.detections))
        asyncio.run(backend.close())
    return out


def main(quick: bool = False) -> Headline:
    import cv2

    from bench._realdata import people_labels, read_frames, street_video
    from bench.detection_quality import street_frame
    from bot.backends.environment import ensure_inference_env
    from bot.config import InferenceConfig

    ensure_inference_env(InferenceConfig())  # before the blocks import inference: the direct backend checks its flags
    cv2.setNumThreads(1)
    video = None if quick else street_video()
    if video is None:
        frames, labels = street_frame()
        where, clip = "the committed street band (768x280, quick)", None
    else:
        labels, clip = people_labels(), video
        frames, where = read_frames(video, set(labels)), "vtest.avi's 10 labelled frames"
    rows = recall_rows(frames, labels, clip)
    print(f"builtin/people on stills of {where}: people found (IoU 0.5)")
    print(f"  {'scale':>6} {'width':>6} {'labelled':>8} {'before':>7} {'now':>5} {'pipeline':>9}")
    width = next(iter(frames.values())).shape[1]
    for s, t in rows.items():
        pipe = str(t["pipeline"]) if clip is not None else "-"
        print(f"  {s:>6} {int(width * s):>6} {t['labelled']:>8} {t['before']:>7} {t['now']:>5} {pipe:>9}")
    sizes = {k: v for k, v in SIZES.items() if not quick or k in ("160 px", "640 px")}
    times = seconds_per_still(next(iter(frames.values())), sizes)
    print("one still through the direct backend (decode, workflow, drawn frame), one core:")
    for name, (seconds, people) in times.items():
        print(f"  {name:>7}: {seconds:6.2f} s, {people} people")
    if quick or clip is None:
        return Headline(", ".join(f"x{s}: {t['now']}/{t['labelled']}" for s, t in rows.items()), GOAL, None)
    close = all(t["now"] >= t["pipeline"] - len(frames) for t in rows.values())
    bounded = times["40 MP"][0] < 30
    figure = ", ".join(f"x{s}: {t['before']}->{t['now']} (pipeline {t['pipeline']})/{t['labelled']}"
                       for s, t in rows.items()) + f"; 40 MP {times['40 MP'][0]:.1f} s"
    return Headline(figure, GOAL, close and bounded)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])

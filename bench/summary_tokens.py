"""Tokens per frame the model would read: the raw workflow output as JSON vs the summarizer's text, one run."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

FRAMES = 60
# Quick: 20 of the 60 frames, the ones around the crossing (same motion per frame, so the tracker keeps its tracks;
# the same crossing spread over fewer frames would jump too far between frames for it). Four summarize_many batches.
QUICK_FRAMES = range(20, 40)
SIZE = (640, 480)


def make_crossing_video(path: Path, frames: int = FRAMES, keep: range | None = None) -> Path:
    """Two astronaut portraits crossing a vertical line at x=320 in opposite directions (Haar finds the faces).

    `keep`: write only these of the `frames` frames (default all)."""
    import cv2
    import numpy as np
    from skimage import data

    tile = cv2.resize(cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR), (200, 200))
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 15, SIZE)
    for i in keep if keep is not None else range(frames):
        frame = np.full((SIZE[1], SIZE[0], 3), 90, np.uint8)
        x = int(10 + (SIZE[0] - 220) * i / (frames - 1))
        frame[20:220, x : x + 200] = tile
        frame[260:460, SIZE[0] - 210 - x + 0 : SIZE[0] - 10 - x] = tile
        writer.write(frame)
    writer.release()
    return path


def run_pipeline(video: Path, spec: dict) -> list[dict]:
    """Raw workflow outputs of every frame from a real InferencePipeline."""
    from inference import InferencePipeline

    outputs: list[dict] = []
    pipeline = InferencePipeline.init_with_workflow(
        video_reference=str(video), workflow_specification=spec,
        on_prediction=lambda out, frame: outputs.append(out),
    )
    pipeline.start()
    pipeline.join()
    return outputs


def main(quick: bool = False) -> Headline:
    """Full: a 60-frame clip. Quick: its 20 frames around the crossing, through the same real pipeline and
    summarizer."""
    from bot.backends.environment import ensure_inference_env

    ensure_inference_env()
    import inference.core  # noqa: F401  installs the process-wide workflows configuration first
    from roboflow_workflows.core_steps.common.serializers import serialize_wildcard_kind

    from bot.backends.convert import from_workflow_output
    from bot.backends.summary import estimate_tokens, summarize, summarize_many
    from bot.backends.workflows import detection_workflow

    spec = detection_workflow("builtin/faces", line=[[320, 0], [320, 480]])
    with tempfile.TemporaryDirectory() as tmp:
        video = make_crossing_video(Path(tmp) / "crossing.mp4", FRAMES, QUICK_FRAMES if quick else None)
        outputs = run_pipeline(video, spec)
    raw_full, raw_no_images, summary, results = [], [], [], []
    for i, out in enumerate(outputs):
        serial = {k: serialize_wildcard_kind(v) for k, v in out.items()}
        raw_full.append(estimate_tokens(json.dumps(serial, default=str)))
        no_img = {k: v for k, v in serial.items() if not (isinstance(v, dict) and v.get("type") == "base64")}
        raw_no_images.append(estimate_tokens(json.dumps(no_img, default=str)))
        res = from_workflow_output(out, frame_id=i)
        results.append(res)
        summary.append(estimate_tokens(summarize(res, label="cam1")))
    batch = [results[i : i + 5] for i in range(0, len(results), 5)]
    batch_tokens = [estimate_tokens(summarize_many(b, label="cam1")) for b in batch]
    mean = statistics.mean
    faces = mean(len(r.detections) for r in results)
    print(f"frames: {len(outputs)}, mean faces/frame: {faces:.2f}, last counts: {results[-1].values}")
    print(f"raw JSON with annotated image: {mean(raw_full):8.0f} tokens/frame")
    print(f"raw JSON without images:       {mean(raw_no_images):8.0f} tokens/frame")
    print(f"summary (summarize):           {mean(summary):8.1f} tokens/frame (max {max(summary)})")
    print(f"summary of 5 frames (summarize_many): {mean(batch_tokens):.1f} tokens per call = "
          f"{mean(batch_tokens) / 5:.1f} tokens/frame")
    print(f"ratio raw-without-images / summary: {mean(raw_no_images) / mean(summary):.1f}x")
    print(f"ratio raw-with-image / summary:     {mean(raw_full) / mean(summary):.0f}x")
    print(f"ratio 5 raw frames / one summarize_many: {5 * mean(raw_no_images) / mean(batch_tokens):.1f}x (no images)")
    return Headline(figure=f"summary {mean(summary):.1f} tokens/frame vs raw JSON {mean(raw_no_images):.0f} without "
                           f"images ({mean(raw_no_images) / mean(summary):.1f}x), {mean(raw_full):.0f} with "
                           f"({mean(raw_full) / mean(summary):.0f}x)",
                    goal="no goal (tokens per frame)", met=None)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])

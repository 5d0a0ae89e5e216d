"""A Vision Agent recipe as a standalone script: `/vision recipe export` fills in the block marked RECIPE below.

It needs only `inference` (`pip install inference`). Results print as one JSON object per frame; the last line is
`{"done": true, ...}` with the final line-crossing totals. `--save-frames DIR` writes the annotated frames;
`--server URL` runs the pipeline on an inference server (inference-sdk) instead of in this process; meant for
streams: a server ends a file pipeline once the file is decoded, dropping the frames still buffered (up to ~64).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# --- RECIPE (filled in by the export) ---
RECIPE = "example"
DESCRIPTION = ""
SPEC: dict[str, Any] | None = None  # the workflow the pipeline runs, embedded
WORKFLOW: dict[str, str] = {}  # or a saved Roboflow workflow: {"workspace_name": ..., "workflow_id": ...}
DEFAULTS: dict[str, Any] = {}  # source, fps, line, zone, confidence: the recipe's parameters
BUILTIN_MODEL = ""  # a builtin/* detector: vision-agent's OpenCV blocks, loaded as an inference plugin
# --- END RECIPE ---
PLUGIN = "bot.backends.builtin_blocks"
NEEDS_PLUGIN = ("vision-agent's builtin/* OpenCV detectors and line counter, a workflows plugin: install the "
                "Vision Agent repository next to inference (pip install -e PATH/TO/vision-agent-checkout; the "
                "PyPI package called vision-agent is an unrelated project)")


def options(argv: list[str] | None = None) -> argparse.Namespace:
    about = f"{RECIPE}: {DESCRIPTION}".strip(": ")
    # argparse %-formats a description only when it holds '%(prog)': then every other '%' must be doubled
    p = argparse.ArgumentParser(description=about.replace("%", "%%") if "%(prog)" in about else about)
    src = DEFAULTS.get("source")
    p.add_argument("--source", default=src, required=src is None,
                   help=f"video file, rtsp/http URL or webcam index (default {str(src).replace('%', '%%')})")
    p.add_argument("--fps", type=float, default=DEFAULTS.get("fps"), help="frame rate limit")
    p.add_argument("--line", default=DEFAULTS.get("line"), help="counting line X1,Y1,X2,Y2 in pixels, or middle; "
                   "add @WIDTHxHEIGHT when measured on a frame of another size")
    p.add_argument("--zone", default=DEFAULTS.get("zone"), help="zone polygon X1,Y1,X2,Y2,X3,Y3,... in pixels "
                   "(@WIDTHxHEIGHT as for --line)")
    p.add_argument("--confidence", type=float, default=DEFAULTS.get("confidence"), help="detector confidence threshold")
    p.add_argument("--save-frames", type=Path, default=None, help="folder for the annotated frames (JPEG)")
    p.add_argument("--server", default=None,
                   help="inference server URL (e.g. http://127.0.0.1:9001) instead of in-process; for streams "
                   "(a server drops the last buffered frames of a file)")
    p.add_argument("--api-key", default=os.environ.get("ROBOFLOW_API_KEY"),
                   help="Roboflow key (default $ROBOFLOW_API_KEY)")
    return p.parse_args(argv)


def load_plugin() -> None:
    """Register the builtin detectors before inference reads WORKFLOWS_PLUGINS (at import)."""
    if not BUILTIN_MODEL:
        return
    try:
        found = importlib.util.find_spec(PLUGIN) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        sys.exit(f"{RECIPE}: {BUILTIN_MODEL} needs {NEEDS_PLUGIN}.")
    plugins = [p for p in os.environ.get("WORKFLOWS_PLUGINS", "").split(",") if p]
    os.environ["WORKFLOWS_PLUGINS"] = ",".join([*plugins, PLUGIN]) if PLUGIN not in plugins else ",".join(plugins)


def points(raw: str, minimum: int) -> tuple[list[list[int]], tuple[int, int] | None]:
    """`X1,Y1,X2,Y2,…[@WIDTHxHEIGHT]` → (the points, the frame size they were measured on or None)."""
    text, size = raw, None
    if "@" in raw:
        text, _, tail = raw.rpartition("@")
        dims = tail.strip().lower().replace("×", "x").split("x")
        if len(dims) != 2 or not all(d.strip().isdigit() and int(d) > 0 for d in dims):
            sys.exit(f"{RECIPE}: @WIDTHxHEIGHT names the frame size the points were measured on, not @{tail!r}")
        size = (int(dims[0]), int(dims[1]))
    nums = [int(float(v)) for v in text.replace(" ", "").split(",") if v]
    if len(nums) < 2 * minimum or len(nums) % 2:
        sys.exit(f"{RECIPE}: expected at least {minimum} x,y points, got {raw!r}")
    return [nums[i : i + 2] for i in range(0, len(nums), 2)], size


def frame_size(source: str, why: str) -> tuple[int, int]:
    """(width, height) of the source's first frame; exits saying `why` it was needed when none can be read."""
    import cv2

    cap = cv2.VideoCapture(int(source) if source.isdigit() else source)
    ok, frame = cap.read()
    cap.release()
    if not ok:
        sys.exit(f"{RECIPE}: cannot read a frame from {source} to {why}")
    h, w = frame.shape[:2]
    return w, h


def placed(raw: str, minimum: int, source: str) -> list[list[int]]:
    """The points on this source's frames: given @WIDTHxHEIGHT, moved onto the frame size the source gives, as
    Vision Agent does (bot/pipelines/counting_line.py `rescale`), so the script counts the line the bot counted."""
    found, size = points(raw, minimum)
    if size is None:
        return found
    width, height = frame_size(source, "move points given @WIDTHxHEIGHT onto its frames")
    return [[round(x * width / size[0]), round(y * height / size[1])] for x, y in found]


def middle_line(source: str) -> list[list[int]]:
    w, h = frame_size(source, "place the middle line")
    return [[w // 2, 0], [w // 2, h]]


def workflow(args: argparse.Namespace) -> dict[str, Any] | None:
    """The embedded spec with this run's line, zone and confidence."""
    if SPEC is None:
        return None
    spec = json.loads(json.dumps(SPEC))
    line = zone = None
    if args.line:
        middle = args.line.strip().lower() == "middle"
        line = middle_line(args.source) if middle else placed(args.line, 2, args.source)
    if args.zone:
        zone = placed(args.zone, 3, args.source)
    for step in spec["steps"]:
        kind = step.get("type", "")
        if line and kind.startswith("roboflow_core/line_counter_visualization"):
            step["zone"] = line  # the drawn line is the counted one
        elif line and kind.startswith(("roboflow_core/line_counter", "vision_agent/line_")):
            step["line_segment"] = line
        if zone and kind.startswith(("roboflow_core/time_in_zone", "roboflow_core/polygon_zone")):
            step["zone"] = zone
        if args.confidence is not None and step.get("name") == "detector":
            step["confidence"] = args.confidence
    return spec


class Printer:
    """One JSON line per frame; the line totals it saw last go in the closing line."""

    def __init__(self, save_to: Path | None) -> None:
        self.save_to, self.frames = save_to, 0
        self.totals: dict[str, Any] = {}
        if save_to:
            save_to.mkdir(parents=True, exist_ok=True)

    def row(self, outputs: dict[str, Any], frame_id: Any) -> None:
        self.frames += 1
        row: dict[str, Any] = {"frame_id": frame_id}
        for key, value in outputs.items():
            if hasattr(value, "xyxy"):  # supervision Detections (in-process)
                names = value.data.get("class_name", []) if hasattr(value, "data") else []
                row[key] = _tally(list(names))
            elif isinstance(value, dict) and isinstance(value.get("predictions"), list):  # server JSON
                row[key] = _tally([d.get("class") for d in value["predictions"]])
            elif hasattr(value, "numpy_image") or (isinstance(value, dict) and value.get("type") == "base64"):
                self._save(value, frame_id)
            elif isinstance(value, (int, float, str, bool)) or value is None:
                row[key] = value
                if key.endswith("count_in") or key.endswith("count_out"):
                    self.totals[key] = value
        print(json.dumps(row, default=str), flush=True)

    def _save(self, image: Any, frame_id: Any) -> None:
        if not self.save_to:
            return
        path = self.save_to / f"frame_{frame_id}.jpg"
        if isinstance(image, dict):
            import base64

            path.write_bytes(base64.b64decode(image["value"]))
        else:
            import cv2

            cv2.imwrite(str(path), image.numpy_image)

    def done(self) -> None:
        print(json.dumps({"done": True, "recipe": RECIPE, "frames": self.frames, **self.totals}), flush=True)


def _tally(names: list[Any]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for n in names:
        counts[str(n)] = counts.get(str(n), 0) + 1
    return {"detections": len(names), "counts": counts}


def source_of(raw: str) -> Any:
    return int(raw) if raw.isdigit() else raw


def run_local(args: argparse.Namespace, out: Printer) -> None:
    load_plugin()
    from inference import InferencePipeline

    target = {"workflow_specification": workflow(args)} if SPEC is not None else dict(WORKFLOW)
    pipeline = InferencePipeline.init_with_workflow(
        video_reference=source_of(args.source), api_key=args.api_key, max_fps=args.fps,
        on_prediction=lambda outputs, frame: out.row(outputs, frame.frame_id), **target,
    )
    pipeline.start()
    pipeline.join()


def run_server(args: argparse.Namespace, out: Printer) -> None:
    from inference_sdk import InferenceHTTPClient

    client = InferenceHTTPClient(api_url=args.server, api_key=args.api_key)
    target = {"workflow_specification": workflow(args)} if SPEC is not None else dict(WORKFLOW)
    started = client.start_inference_pipeline_with_workflow(
        video_reference=source_of(args.source), max_fps=args.fps, source_buffer_filling_strategy="WAIT",
        source_buffer_consumption_strategy="LAZY", **target,
    )
    pid = started["context"]["pipeline_id"]
    try:
        while True:
            try:
                response = client.consume_inference_pipeline_result(pid)
            except Exception:  # the server forgets a pipeline whose video ended
                return
            metas = response.get("frames_metadata") or [{}] * len(response.get("outputs") or [])
            for outputs, meta in zip(response.get("outputs") or [], metas, strict=False):
                if outputs:
                    out.row(outputs, meta.get("frame_id"))
            if not response.get("outputs"):
                time.sleep(0.2)
    finally:
        try:
            client.terminate_inference_pipeline(pid)
        except Exception:
            pass


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    out = Printer(args.save_frames)
    try:
        (run_server if args.server else run_local)(args, out)
    except KeyboardInterrupt:
        pass
    out.done()
    return 0


if __name__ == "__main__":
    sys.exit(main())

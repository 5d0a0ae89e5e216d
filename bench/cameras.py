"""Cost per camera: RSS, CPU, delivered fps and result lag for 1..16 cameras through the direct backend.

Each row is a fresh process (bench/_cameras_worker.py) running N cameras at 5 fps on looped real footage scaled to
640x480: even cameras watch a busy street (opencv-doc vtest.avi), odd ones a quiet one (a still frame of it with
sensor noise); `--scenes` picks busy (every camera on the busy street), quiet and mixed rows, all three by
default. "before" runs the same worker against bot/ as it was at BEFORE_COMMIT (or `--before COMMIT`; unpacked with `git
archive`), "no gate" against this tree with `inference.motion_gate: false` (with `--gate-off`), "after" against this
tree, alternating so load drift on a shared machine hits all alike.
Quick mode: one busy camera of builtin/people for a few seconds, this tree only, on the committed 5 fps clip.
The headline: a busy people camera's CPU per frame (issue 34: <= 40 ms, so 4 hold 5 fps on 2 cores), and RSS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Figure, Headline  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "_cameras_worker.py"
BEFORE_COMMIT = "62810b8"  # main before issue 34's busy-camera work (one upscale for every crop, whole-frame rescans)
MODELS = ("builtin/people", "builtin/motion")
CAMERAS, SECONDS = (1, 2, 4, 8, 16), 20.0
QUICK_CAMERAS, QUICK_SECONDS = (1,), 4.0
SIZE = (640, 480)
GOAL = "busy people camera <= 40 ms CPU/frame"
BUSY_MS = 40.0
RSS_GOAL_MB = 700
SCENES = ("busy", "quiet", "mixed")


def _scaled(video: Path) -> Iterator[Any]:
    """The video's frames at SIZE, read one at a time (vtest.avi whole would be a gigabyte of pixels)."""
    import cv2

    cap = cv2.VideoCapture(str(video))
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                return
            yield cv2.resize(frame, SIZE, interpolation=cv2.INTER_AREA)
    finally:
        cap.release()


def footage(folder: Path, quick: bool) -> tuple[Path, Path] | None:
    """(busy, quiet) 640x480 clips made from real footage; None when vtest.avi is not here (full mode)."""
    import cv2
    import numpy as np

    from bench._realdata import street_video

    if quick:
        source, fps, loops = ROOT / "tests" / "fixtures" / "data" / "substream_5fps.mp4", 5.0, 2
    else:
        video = street_video()
        if video is None:
            return None
        source, fps, loops = video, 10.0, 3  # 80 s of street a loop: warm-up plus the window of 16 cameras
    busy, quiet = folder / "busy.mp4", folder / "quiet.mp4"
    fourcc, rng, still, written = cv2.VideoWriter_fourcc(*"mp4v"), np.random.default_rng(0), None, 0
    out = cv2.VideoWriter(str(busy), fourcc, fps, SIZE)
    for _ in range(loops):
        for frame in _scaled(source):
            out.write(frame)
            still = frame.astype(np.int16) if still is None else still
            written += 1
    out.release()
    noisy = [np.clip(still + rng.normal(0, 2, still.shape), 0, 255).astype(np.uint8) for _ in range(int(fps) * 2)]
    out = cv2.VideoWriter(str(quiet), fourcc, fps, SIZE)
    for i in range(written):  # the first frame held still, with a camera's sensor noise
        out.write(noisy[i % len(noisy)])
    out.release()
    return busy, quiet


def before_tree(folder: Path, commit: str = BEFORE_COMMIT) -> Path | None:
    """bot/ as it was at commit, unpacked into folder; None (after a line) when git cannot give it."""
    target = folder / "before"
    target.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "bot"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"no 'before' rows: git cannot unpack {commit} here ({exc})")
        return None
    return target


def run_worker(tree: Path, model: str, cameras: int, seconds: float, clips: tuple[Path, Path], fps: float,
               motion_gate: bool = True, scene: str = "mixed") -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env["PYTHONPATH"] = str(tree)  # only bot/ from the tree under test: the worker imports nothing from bench
    cmd = [sys.executable, str(WORKER), model, str(cameras), str(seconds), str(clips[0]), str(clips[1]),
           "--fps", str(fps), "--scene", scene] + ([] if motion_gate else ["--no-motion-gate"])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree, timeout=900)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"camera worker failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return json.loads(line[len("RESULT "):])


def row(label: str, r: dict) -> str:
    heavy = "+".join(m for m in ("torch", "transformers") if r[m]) or "-"
    return (f"{label:<7} {r['model']:<15} {r.get('scene', 'mixed'):<6} {r['cameras']:>4} {r['idle_mb']:>7} {r['rss_mb']:>7} {r.get('anon_mb', '-'):>7} {r['peak_mb']:>7} "
            f"{100 * r['cpu_per_camera']:>8.0f}% {_ms_per_frame(r):>7} {r['fps_mean']:>7.2f} {r['fps_min']:>7.2f} "
            f"{r['lag_ms_p50']:>8.0f} {r['lag_ms_p95']:>8.0f} {_jpegs(r):>13}  {heavy}")


def _ms_per_frame(r: dict) -> str:
    """CPU per delivered frame: on a loaded machine a slow camera delivers fewer frames, so CPU/cam alone flatters it."""
    return f"{1000 * r['cpu_per_camera'] / r['fps_mean']:.0f}" if r["fps_mean"] else "-"


def _jpegs(r: dict) -> str:
    made = r["results"] if r["jpegs"] is None else r["jpegs"]  # before frames were made on demand: one a result
    return f"{made}/{r['results']}"


def capacity(rows: list[dict], fps: float) -> tuple[int, int | None]:
    """(most cameras measured that all kept >= 90 % of fps, cameras the cores would hold at fps).

    The second is an estimate from CPU per delivered frame (the median over the rows: a saturated row delivers
    fewer frames, so its CPU per camera flatters it), so a run that stopped at 16 cameras still says whether 30 would
    fit; None when no frame was delivered."""
    held = [r["cameras"] for r in rows if r["fps_mean"] >= 0.9 * fps and r["fps_min"] >= 0.8 * fps]
    per_frame = sorted(r["cpu_per_camera"] / r["fps_mean"] for r in rows if r["fps_mean"] > 0)
    if not per_frame:
        return max(held, default=0), None
    share = per_frame[len(per_frame) // 2] * fps  # of one core, for one camera at the full rate
    return max(held, default=0), int((os.cpu_count() or 1) * 0.9 / share) if share > 0 else None


def print_capacity(every: list[tuple[str, dict]], fps: float) -> None:
    """How many cameras of each kind this machine holds at fps: measured, and estimated from CPU per camera."""
    kinds = sorted({(label, r["model"], r.get("scene", "mixed")) for label, r in every})
    print(f"\ncameras this {os.cpu_count()}-core machine holds at {fps:g} fps (every camera >= 90 % of the rate; "
          f"estimate = 90 % of the cores over one camera's CPU per frame x the rate)")
    print(f"{'code':<7} {'model':<15} {'scene':<6} {'held':>5} {'estimate':>9}")
    for label, model, scene in kinds:
        rows = [r for lab, r in every if (lab, r["model"], r.get("scene", "mixed")) == (label, model, scene)]
        held, estimate = capacity(rows, fps)
        print(f"{label:<7} {model:<15} {scene:<6} {held:>5} {'-' if estimate is None else estimate:>9}")


HEADER = (f"{'code':<7} {'model':<15} {'scene':<6} {'cams':>4} {'idle MB':>7} {'RSS MB':>7} {'anon MB':>7} {'peak MB':>7} "
          f"{'CPU/cam':>9} {'ms/frame':>7} "
          f"{'fps/cam':>7} {'min fps':>7} {'lag p50':>8} {'lag p95':>8} {'JPEGs/results':>13}  heavy imports")


def main(quick: bool = False, cameras: tuple[int, ...] | None = None, models: tuple[str, ...] | None = None,
         before: bool = True, before_commit: str = BEFORE_COMMIT, gate_off: bool = False,
         scenes: tuple[str, ...] | None = None) -> Headline:
    counts = cameras or (QUICK_CAMERAS if quick else CAMERAS)
    models = models or (MODELS[:1] if quick else MODELS)
    seconds, fps = (QUICK_SECONDS, 5.0) if quick else (SECONDS, 5.0)
    scenes = scenes or (SCENES[:1] if quick else SCENES)
    with tempfile.TemporaryDirectory(prefix="bench-cameras-") as tmp:
        clips = footage(Path(tmp), quick)
        if clips is None:
            return Headline("skipped: no vtest.avi", GOAL, None)
        trees: dict[str, tuple[Path, bool]] = {"after": (ROOT, True)}  # label -> (tree, motion gate)
        old = before_tree(Path(tmp), before_commit) if before and not quick else None
        if gate_off:
            trees = {"no gate": (ROOT, False), **trees}
        if old is not None:
            trees = {"before": (old, True), **trees}
        print(f"{len(counts)} camera counts x {len(models)} models, {fps:g} fps, {seconds:g} s window, "
              f"clips {SIZE[0]}x{SIZE[1]}; CPU is % of one core per camera; lag (ms) = how far a result trails its camera's best")
        print(HEADER)
        results: dict[tuple[str, str, str, int], dict] = {}
        every: list[tuple[str, dict]] = []
        for model in models:
            for scene in scenes:
                for n in counts:
                    for label, (tree, gate) in trees.items():
                        r = run_worker(tree, model, n, seconds, clips, fps, gate, scene)
                        results[(label, model, scene, n)] = r
                        every.append((label, r))
                        print(row(label, r), flush=True)
        print_capacity(every, fps)
    return headline(results, models[0], scenes[0], counts, quick)


def headline(results: dict[tuple[str, str, str, int], dict], model: str, scene: str, counts: tuple[int, ...],
             quick: bool) -> Headline:
    """The busy camera's CPU per frame beside its goal (the first scene run: busy unless --scenes says otherwise),
    before -> after when both ran; and the first camera's RSS on a row of its own."""
    first = results[("after", model, scene, counts[0])]
    before = results.get(("before", model, scene, counts[0]))
    ms = 1000 * first["cpu_per_camera"] / first["fps_mean"] if first["fps_mean"] else None
    was = f"{_ms_per_frame(before)} -> " if before is not None else ""
    figure = f"{scene} {model} camera {was}{_ms_per_frame(first)} ms CPU/frame at {first['fps_mean']:.1f} fps"
    extra = ""
    if len(counts) > 1:
        last = results[("after", model, scene, counts[-1])]
        extra = f", +{(last['rss_mb'] - first['rss_mb']) / (counts[-1] - counts[0]):.0f} MB/cam"
    # RSS also counts the shared libraries' pages mapped in, which depend on the page cache (a freshly installed
    # .venv read ~300 MB more for the same code): anon MB, the process's own memory, is said beside it.
    rss = Figure("RSS", f"1st cam {first['rss_mb']} MB ({first['anon_mb']} anon){extra}", f"< {RSS_GOAL_MB} MB",
                 first["rss_mb"] < RSS_GOAL_MB)
    judged = None if quick or ms is None or scene != "busy" else ms <= BUSY_MS
    return Headline(figure, GOAL, judged, (rss,))


if __name__ == "__main__":  # `python bench/cameras.py [--quick] [--cameras 1,2,4] [--models builtin/people]`
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cameras", type=lambda v: tuple(int(x) for x in v.split(",")))
    parser.add_argument("--models", type=lambda v: tuple(v.split(",")))
    parser.add_argument("--no-before", action="store_true", help="this tree only")
    parser.add_argument("--before", default=BEFORE_COMMIT, help=f"the commit of the 'before' rows ({BEFORE_COMMIT})")
    parser.add_argument("--gate-off", action="store_true", help="also rows with inference.motion_gate: false")
    parser.add_argument("--scenes", type=lambda v: tuple(v.split(",")), default=None,
                        help="busy, quiet, mixed (every other camera quiet): e.g. quiet,busy (default: all three)")
    args = parser.parse_args()
    print(main(args.quick, args.cameras, args.models, before=not args.no_before, before_commit=args.before,
               gate_off=args.gate_off, scenes=args.scenes))

"""One bench.cameras measurement in a fresh process: N cameras through the direct backend, figures as one JSON line.

Run as a script (`python bench/_cameras_worker.py ...`), never as `bench._cameras_worker`: bench/cameras.py points
PYTHONPATH at either this tree or a "before" copy of bot/, and the worker imports only `bot` (no `bench`), so the
same measuring code runs against both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

WARM_TIMEOUT = 180.0  # seconds for every camera to deliver its first results on a loaded machine


def _status_mb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return -1


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _jpegs_made() -> int | None:
    """Frames JPEG-encoded so far (bot/ counts them since frames are made on demand); None: every result had one."""
    from bot.backends import base

    lazy = getattr(base, "LazyJpeg", None)
    return lazy.made if lazy is not None else None


class Tally:
    """Results per camera and their lag, from the pipeline threads.

    A file source stamps each frame on the file's own clock (its creation time plus video time), not when it was
    read, so a result's age is an unknown constant plus its delay; a camera's lag is its age minus the smallest age
    it ever showed: ~0 while it keeps up, growing when it falls behind.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.best: dict[str, float] = {}
        self.ages: list[tuple[str, float]] = []
        self.measuring = False

    def listener(self, camera: str) -> Callable[[object, object], None]:
        def on_result(handle: object, result: object) -> None:
            age = time.time() - float(getattr(result, "timestamp", time.time()))
            with self.lock:
                self.counts[camera] = self.counts.get(camera, 0) + 1
                self.best[camera] = min(age, self.best.get(camera, age))
                if self.measuring:
                    self.ages.append((camera, age))
        return on_result

    def lags(self) -> list[float]:
        with self.lock:
            return sorted(age - self.best[camera] for camera, age in self.ages)

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)


async def measure(model: str, cameras: int, seconds: float, busy: str, quiet: str, fps: float,
                  motion_gate: bool = True, scene: str = "mixed") -> dict:
    from bot.backends.base import WorkflowRef
    from bot.backends.direct.backend import DirectBackend
    from bot.config import load_settings

    with tempfile.TemporaryDirectory() as tmp:
        # motion_gate is set only when off: an older bot/ (the "before" rows) has no such setting
        off = {} if motion_gate else {"inference": {"motion_gate": False}}
        backend = DirectBackend(load_settings({"VISION_AGENT_WORKSPACE": tmp, "VISION_AGENT_HEARTBEAT_MINUTES": "0"},
                                              **off))
        idle = _status_mb("VmRSS")
        tally = Tally()
        try:
            for i in range(cameras):  # mixed: every other camera watches the quiet street
                name, clip = f"cam{i}", {"busy": busy, "quiet": quiet}.get(scene, busy if i % 2 == 0 else quiet)
                await backend.start_pipeline(name, name, clip, WorkflowRef(model_id=model),
                                             max_fps=fps, on_result=tally.listener(name))
            deadline = time.monotonic() + WARM_TIMEOUT
            while time.monotonic() < deadline and not (len(c := tally.snapshot()) == cameras and min(c.values()) >= 2):
                await asyncio.sleep(0.1)
            first, cpu0, t0 = tally.snapshot(), _cpu(), time.monotonic()
            tally.measuring = True
            await asyncio.sleep(seconds)
            last, cpu1, t1 = tally.snapshot(), _cpu(), time.monotonic()
            encoded = _jpegs_made()
            rss, anon = _status_mb("VmRSS"), _status_mb("RssAnon")
        finally:
            await backend.close()
    window = t1 - t0
    per_camera = [(last.get(c, 0) - first.get(c, 0)) / window for c in (f"cam{i}" for i in range(cameras))]
    lag = tally.lags() or [float("nan")]
    return {
        "model": model, "cameras": cameras, "scene": scene, "idle_mb": idle, "rss_mb": rss, "anon_mb": anon, "peak_mb": _status_mb("VmHWM"),
        "cpu_per_camera": (cpu1 - cpu0) / window / cameras, "fps_min": min(per_camera),
        "fps_mean": statistics.mean(per_camera), "lag_ms_p50": 1000 * lag[len(lag) // 2],
        "lag_ms_p95": 1000 * lag[min(len(lag) - 1, int(len(lag) * 0.95))],
        "results": sum(last.values()), "jpegs": encoded,
        "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("cameras", type=int)
    parser.add_argument("seconds", type=float)
    parser.add_argument("busy")
    parser.add_argument("quiet")
    parser.add_argument("--fps", type=float, default=5.0)
    parser.add_argument("--no-motion-gate", action="store_true", help="inference.motion_gate: false")
    parser.add_argument("--scene", choices=("mixed", "busy", "quiet"), default="mixed")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.model, args.cameras, args.seconds, args.busy, args.quiet, args.fps,
                                  motion_gate=not args.no_motion_gate, scene=args.scene))
    print("RESULT " + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()

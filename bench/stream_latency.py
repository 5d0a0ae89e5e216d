"""End-to-end latency, frame sent by the camera → its result in the bot, for the direct, http and webrtc backends.

One run, one source: a live MJPEG camera served from this process at 10 fps (the generated face video, looped), each
frame carrying its sequence number as a 16-bit barcode. Each backend in turn runs the same face + line workflow on
it (the http and webrtc ones through one local `vision-agent inference-server`, which opens the camera itself); the
number read back from each result's annotated frame says when that frame was sent. So latency = time the result
reached the bot - time the camera wrote the frame, whatever the backends stamp. Also: seconds to the first result.
Quick mode: the same three backends and server, QUICK_SECONDS of watching each.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import Headline  # noqa: E402

FPS, SECONDS = 10, 15  # each backend watches the camera this long after its first result
QUICK_SECONDS = 3
BITS, CELL, ORIGIN = 16, 16, (8, 232)  # barcode cells left of the counting line, between the two faces' paths


def _stamp(frame: Any, n: int) -> Any:
    """The frame with n drawn as BITS black/white cells (JPEG and annotation survive 16 px cells)."""
    out = frame.copy()
    x0, y0 = ORIGIN
    for b in range(BITS):
        out[y0 : y0 + CELL, x0 + b * CELL : x0 + (b + 1) * CELL] = 255 if n >> b & 1 else 0
    return out


def _read_stamp(jpeg: bytes) -> int | None:
    import cv2
    import numpy as np

    im = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)
    if im is None or im.shape[1] != 640:
        return None
    x0, y0 = ORIGIN
    return sum(1 << b for b in range(BITS) if im[y0 + CELL // 2, x0 + b * CELL + CELL // 2] > 128)


class Camera:
    """A live MJPEG camera on 127.0.0.1: every client gets the newest frames at FPS; sent[n] = when frame n went out."""

    def __init__(self, frames: list[Any]) -> None:
        import http.server
        import threading

        from tests.fixtures.common import free_port

        self.frames = frames
        self.sent: dict[int, float] = {}
        self._n = 0
        self._lock = threading.Lock()
        camera = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                try:
                    camera.stream(self.wfile)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/stream.mjpg"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stream(self, out: Any) -> None:
        import cv2

        next_at = time.monotonic()
        while True:
            with self._lock:
                n, self._n = self._n, self._n + 1
            jpeg = cv2.imencode(".jpg", _stamp(self.frames[n % len(self.frames)], n))[1].tobytes()
            self.sent[n] = time.time()
            out.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg) + jpeg + b"\r\n")
            out.flush()
            next_at += 1 / FPS
            time.sleep(max(next_at - time.monotonic(), 0))

    def close(self) -> None:
        self.server.shutdown()


def _server(run_dir: Path) -> tuple[subprocess.Popen, str]:
    """The real local inference server on free ports (as the test fixture starts it)."""
    from tests.fixtures.common import free_port
    from tests.fixtures.inference import REPO, _wait_for_info

    port = free_port()
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(VISION_AGENT_SERVER_DIR=str(run_dir), STREAM_MANAGER_PORT=str(free_port()), HF_HUB_OFFLINE="1")
    log = open(run_dir / "server.log", "wb")  # noqa: SIM115 - lives as long as the server
    code = f"import sys; from bot.backends.http.server import main; sys.exit(main(port={port}))"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    _wait_for_info(url, proc, timeout=120)
    return proc, url


async def _measure(backend: Any, camera: Camera, spec: dict, seconds: float = SECONDS
                   ) -> tuple[list[float], float, int]:
    """(latencies in ms, seconds to the first result, results) of `seconds` of watching the camera."""
    lat: list[float] = []
    first: list[float] = []
    started = time.time()

    def listener(handle: Any, result: Any) -> None:
        now = time.time()
        first.append(now)
        n = _read_stamp(result.frame) if result.frame else None
        if n is not None and n in camera.sent:
            lat.append((now - camera.sent[n]) * 1000)

    from bot.backends.base import WorkflowRef

    pid = f"bench-{backend.name}"
    await backend.start_pipeline(pid, "bench", camera.url, WorkflowRef(workflow_spec=spec), on_result=listener)
    deadline = time.monotonic() + 120
    while not first and time.monotonic() < deadline:
        status = await backend.get_pipeline_status(pid)
        if status.status not in ("starting", "running"):
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(seconds if first else 0)
    status = await backend.get_pipeline_status(pid)
    await backend.stop_pipeline(pid)
    if not lat:
        raise RuntimeError(f"{backend.name}: no readable results ({status.status}: {status.error})")
    return lat, (first[0] - started), len(first)


def _line(name: str, lat: list[float], startup: float, n: int) -> str:
    q = statistics.quantiles(lat, n=20, method="inclusive")
    return (f"{name:7s} median {statistics.median(lat):7.1f} ms   p95 {q[18]:7.1f} ms   max {max(lat):7.1f} ms   "
            f"({len(lat)} of {n} results read; first after {startup:5.1f} s)")


async def _main(seconds: float) -> dict[str, float]:
    """Print each backend's line; return the median latency (ms) of those that gave results."""
    from bot.backends.direct.backend import DirectBackend
    from bot.backends.http.backend import HttpBackend
    from bot.backends.webrtc.backend import WebRtcBackend
    from bot.backends.workflows import detection_workflow
    from bot.config import load_settings
    from tests.fixtures.inference import _kill_group, crossing_line, make_video

    with tempfile.TemporaryDirectory() as tmp:
        camera = Camera(_frames(make_video(Path(tmp) / "bench.mp4", frames=60, fps=FPS)))
        spec = detection_workflow("builtin/faces", line=crossing_line())
        (Path(tmp) / "srv").mkdir()
        medians: dict[str, float] = {}
        proc, url = await asyncio.to_thread(_server, Path(tmp) / "srv")
        try:
            env = {"VISION_AGENT_WORKSPACE": tmp, "VISION_AGENT_HEARTBEAT_MINUTES": "0", "INFERENCE_SERVER_URL": url}
            settings = load_settings(env)
            print(f"live MJPEG camera at {FPS} fps (640x480), builtin/faces + line, {seconds:g} s per backend")
            for backend in (DirectBackend(settings), HttpBackend(settings), WebRtcBackend(settings)):
                try:
                    lat, startup, n = await _measure(backend, camera, spec, seconds)
                    medians[backend.name] = statistics.median(lat)
                    print(_line(backend.name, lat, startup, n), flush=True)
                except RuntimeError as exc:
                    print(exc)
                finally:
                    await backend.close()
        finally:
            camera.close()
            await asyncio.to_thread(_kill_group, proc)
    return medians


def _frames(video: Path) -> list[Any]:
    import cv2

    cap = cv2.VideoCapture(str(video))
    frames = []
    while (got := cap.read())[0]:
        frames.append(got[1])
    cap.release()
    return frames


def main(quick: bool = False) -> Headline:
    medians = asyncio.run(_main(QUICK_SECONDS if quick else SECONDS))
    missing = [name for name in ("direct", "http", "webrtc") if name not in medians]
    figure = "median " + " / ".join(f"{name} {ms:.0f}" for name, ms in medians.items()) + " ms"
    return Headline(figure + (f" ({', '.join(missing)}: no results)" if missing else ""),
                    "frame sent -> result in the bot", None)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])

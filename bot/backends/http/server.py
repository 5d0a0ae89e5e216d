"""`vision-agent inference-server`: the Roboflow inference HTTP server from the pip package, offline-ready, no Docker."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from bot.backends.environment import BOT_SECRETS, ensure_inference_env

# Set before `inference` is imported: its env module reads them once.
SERVER_ENV = {
    "OFFLINE_MODE": "True",  # no calls home; Roboflow-hosted weights fail fast instead of hanging
    "ENABLE_STREAM_API": "True",  # the stream manager: hosted pipelines
    "METRICS_ENABLED": "False",
    # The webrtc backend's MJPEG cameras are on the LAN or this host; the server's WebRTC worker refuses such
    # addresses by default (a hosted server's guard). This server's /inference_pipelines opens any URL already.
    "WEBRTC_MJPEG_ALLOW_NON_GLOBAL_ADDRESSES": "True",
}
# HttpInterface mounts these (the landing page) relative to the working directory.
STATIC_DIRS = ("inference/landing/out/static", "inference/landing/out/_next/static")


def _run_dir() -> Path:
    """A working directory we own (never the repo): VISION_AGENT_SERVER_DIR, or a fresh temp dir."""
    configured = os.environ.get("VISION_AGENT_SERVER_DIR")
    path = Path(configured) if configured else Path(tempfile.mkdtemp(prefix="vision-agent-inference-"))
    for sub in STATIC_DIRS:
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path


def _port_free(host: str, port: int) -> bool:
    """Whether nothing listens there. SO_REUSEADDR as uvicorn binds: the connections a crashed server leaves in
    TIME_WAIT must not keep it from starting again on its port for a minute."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def prepare_environment() -> Path:
    """Env vars, plugin registration, import path for child processes, and the working directory."""
    for key, value in SERVER_ENV.items():
        os.environ[key] = value
    # The server runs specs any local client posts: custom Python, environment and disk access stay off (no
    # operator config here), and the bot's own credentials leave this process and the pipeline processes it forks.
    ensure_inference_env(None)
    for name in BOT_SECRETS:
        os.environ.pop(name, None)
    # The stream manager's pipeline processes import our plugin: make `bot` importable from any cwd.
    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    if root not in sys.path:
        sys.path.insert(0, root)
    run_dir = _run_dir()
    os.chdir(run_dir)
    return run_dir


def build_app() -> tuple[Any, Any]:
    """(FastAPI app, stream manager process) built the way the inference docker image's cpu_http.py does."""
    from functools import partial
    from multiprocessing import Process

    from inference.core.env import MAX_ACTIVE_MODELS, STREAM_API_PRELOADED_PROCESSES
    from inference.core.interfaces.http.http_api import HttpInterface
    from inference.core.interfaces.stream_manager.manager_app.app import start
    from inference.core.managers.base import ModelManager
    from inference.core.managers.decorators.fixed_size_cache import WithFixedSizeCache
    from inference.core.registries.roboflow import RoboflowModelRegistry
    from inference.models.utils import ROBOFLOW_MODEL_TYPES

    stream_manager = Process(target=partial(start, expected_warmed_up_pipelines=STREAM_API_PRELOADED_PROCESSES))
    stream_manager.start()
    model_manager = ModelManager(model_registry=RoboflowModelRegistry(ROBOFLOW_MODEL_TYPES))
    model_manager = WithFixedSizeCache(model_manager, max_size=MAX_ACTIVE_MODELS)
    model_manager.init_pingback()
    return HttpInterface(model_manager).app, stream_manager


def main(host: str = "127.0.0.1", port: int = 9001) -> int:
    """Run the server until interrupted; returns the exit code (1 when the port is taken)."""
    if not _port_free(host, port):
        print(f"port {port} on {host} is in use: stop the other server or pass --port", file=sys.stderr)
        return 1
    stream_port = int(os.environ.get("STREAM_MANAGER_PORT", "7070"))
    if not _port_free("127.0.0.1", stream_port):
        print(
            f"the stream manager port {stream_port} is in use (a previous server may hold it for ~60 s): "
            "wait, or set STREAM_MANAGER_PORT to a free port",
            file=sys.stderr,
        )
        return 1
    owns_dir = not os.environ.get("VISION_AGENT_SERVER_DIR")
    run_dir = prepare_environment()
    import uvicorn

    app, stream_manager = build_app()
    print(f"inference server on http://{host}:{port} (offline, plugin builtin/*; working dir {run_dir})", flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        if stream_manager.is_alive():
            stream_manager.terminate()
            stream_manager.join(timeout=10)
        if owns_dir:
            os.chdir(tempfile.gettempdir())
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

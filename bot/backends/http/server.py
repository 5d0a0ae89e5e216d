"""`vision-agent inference-server`: the Roboflow inference HTTP server from the pip package, offline-ready, no Docker."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from bot.backends.environment import BOT_SECRETS, ensure_inference_env
from bot.backends.http import stream_manager

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


def build_app() -> Any:
    """The FastAPI app, built the way the inference docker image's cpu_http.py does (its pipeline API talks to the
    stream manager on STREAM_MANAGER_PORT, which stream_manager.start set)."""
    from inference.core.env import MAX_ACTIVE_MODELS
    from inference.core.interfaces.http.http_api import HttpInterface
    from inference.core.managers.base import ModelManager
    from inference.core.managers.decorators.fixed_size_cache import WithFixedSizeCache
    from inference.core.registries.roboflow import RoboflowModelRegistry
    from inference.models.utils import ROBOFLOW_MODEL_TYPES

    model_manager = ModelManager(model_registry=RoboflowModelRegistry(ROBOFLOW_MODEL_TYPES))
    model_manager = WithFixedSizeCache(model_manager, max_size=MAX_ACTIVE_MODELS)
    model_manager.init_pingback()
    return HttpInterface(model_manager).app


def main(host: str = "127.0.0.1", port: int = 9001) -> int:
    """Run the server until interrupted; returns the exit code (1 when its port is taken or its stream manager does
    not start). Its stream manager gets a free port of its own (STREAM_MANAGER_PORT pins one), named in the ready
    line, which is printed once the manager listens: several servers on one machine never share one."""
    if not _port_free(host, port):
        print(f"port {port} on {host} is in use: stop the other server or pass --port", file=sys.stderr)
        return 1
    try:
        stream_port = stream_manager.configured_port()
    except stream_manager.StreamManagerError as exc:
        print(exc, file=sys.stderr)
        return 1
    if stream_port is not None and not _port_free("127.0.0.1", stream_port):
        print(
            f"the stream manager port {stream_port} is in use (a previous server may hold it for ~60 s): "
            "wait, or set STREAM_MANAGER_PORT to another free port, or unset it (a free one is picked)",
            file=sys.stderr,
        )
        return 1
    owns_dir = not os.environ.get("VISION_AGENT_SERVER_DIR")
    run_dir = prepare_environment()
    manager: stream_manager.StreamManager | None = None
    import uvicorn

    try:
        manager, app = stream_manager.start(stream_port, build_app)
        stream_manager.watch(manager)
        print(f"inference server on http://{host}:{port} (offline, plugin builtin/*; stream manager on 127.0.0.1:"
              f"{manager.port}; working dir {run_dir})", flush=True)
        # uvicorn shuts down on SIGTERM, then raises it again with this handler back: an exit that runs `finally`
        # (the stream manager stopped) instead of the default one that kills the process on the spot.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        uvicorn.run(app, host=host, port=port, log_level="warning")
    except stream_manager.StreamManagerError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        if manager is not None:
            manager.stop()
        if owns_dir:
            os.chdir(tempfile.gettempdir())
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

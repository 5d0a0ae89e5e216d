"""Hostile media through the real tools, /vision commands and restore: oversized images and bombs, still images as
video sources, stream URLs into the LAN; refused with one line before the backend is asked to open anything."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.backends.provider import BackendProvider
from bot.commands.dispatch import CommandContext, in_commands, run_command
from bot.monitoring.alerts import AlertRouter
from bot.pipelines.manager import PipelineManager
from bot.pipelines.restore import BackgroundRestore
from bot.services import Services
from tests.fixtures.inference import make_video
from tests.fixtures.media import PortWatch, register_cameras
from tests.tools.fake_backend import FakeBackend
from tools import build_registry

STILL = "still image; use run_inference or ask_about_image on it, or give a video file or stream"


@pytest.fixture
def reg():
    return build_registry()


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def ctx(settings, workspace_dir: Path, backend: FakeBackend) -> ToolContext:
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    return ToolContext(settings=settings, services=Services(backend=BackendProvider.of(backend), pipelines=mgr))


def opened(backend: FakeBackend) -> list[str]:
    return [c[1].get("video_reference") or "image" for c in backend.calls if c[0] in ("start_pipeline", "run_single")]


async def test_a_144_megapixel_png_is_an_error_the_model_can_act_on(reg, ctx, backend, workspace_dir, png_12000):
    (workspace_dir / "huge.png").write_bytes(png_12000)
    for tool, args in (("run_inference", {"model_id": "builtin/faces"}), ("ask_about_image", {"question": "what?"}),
                       ("detect_zero_shot", {"class_names": ["cat"]})):
        res = await reg.execute(tool, {"image": "huge.png", **args}, ctx)
        assert res.is_error and "is 12000×12000 (144 MP); the limit is 40 MP — send a smaller image" in res.text
    assert opened(backend) == []


async def test_a_decompression_bomb_as_base64_is_refused_in_one_line(reg, ctx, backend, png_bomb):
    data = "data:image/png;base64," + base64.b64encode(png_bomb).decode()
    res = await reg.execute("run_inference", {"image": data, "model_id": "builtin/faces"}, ctx)
    assert res.is_error and "decompression bomb (400 MP" in res.text and "\n" not in res.text
    assert opened(backend) == []


async def test_the_pixel_limit_comes_from_settings(reg, backend, workspace_dir, base_env):
    from bot.config import load_settings

    settings = load_settings({**base_env, "VISION_AGENT_MAX_PIXELS": "1000"})
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    ctx = ToolContext(settings=settings, services=Services(backend=BackendProvider.of(backend), pipelines=mgr))
    from tests.handlers.transport.test_files import jpeg

    (workspace_dir / "small.jpg").write_bytes(jpeg(64, 48))  # 3072 pixels
    res = await reg.execute("run_inference", {"image": "small.jpg", "model_id": "builtin/faces"}, ctx)
    assert res.is_error and "is 64×48 (3072 pixels); the limit is 1000 pixels" in res.text


@pytest.mark.parametrize("ref", ["photo.jpg", "renamed.mp4", "http://93.184.215.14/snapshot.jpg",
                                 "rtsp://93.184.215.14/cam.png?x=1"])
async def test_a_still_image_as_a_video_source_is_refused(reg, ctx, backend, workspace_dir, ref):
    from tests.handlers.transport.test_files import jpeg

    (workspace_dir / "photo.jpg").write_bytes(jpeg())
    (workspace_dir / "renamed.mp4").write_bytes(jpeg())  # sniffed, not trusted by name
    res = await reg.execute("start_pipeline", {"video_reference": ref, "pipeline_name": "p",
                                               "model_id": "builtin/faces"}, ctx)
    assert res.is_error and STILL in res.text
    assert opened(backend) == []


async def test_vision_start_refuses_a_still_image_and_a_loopback_stream(settings, workspace_dir, backend, port_watch):
    from tests.handlers.transport.test_files import jpeg

    (workspace_dir / "photo.png").write_bytes(jpeg())
    router = AlertRouter(workspace_dir / ".state" / "alerts.json", default_channel="#general")
    mgr = PipelineManager(lambda: backend, workspace_dir / "active_state.json", settings)
    cctx = CommandContext(settings, Services(pipelines=mgr, router=router), user_id="U1", channel_id="C1")
    still = await run_command("start photo.png line=middle", cctx)
    assert not still.ok and in_commands(STILL) in still.text and "run_inference" not in still.text  # said as /vision
    lan = await run_command(f"start rtsp://127.0.0.1:{port_watch.port}/live line=middle", cctx)
    assert not lan.ok and "local/private address" in lan.text
    assert opened(backend) == [] and port_watch.accepted == 0  # not even the line=middle probe connected


async def test_a_saved_still_image_pipeline_is_not_restarted(settings, workspace_dir, backend, caplog):
    from tests.handlers.transport.test_files import jpeg

    (workspace_dir / "photo.jpg").write_bytes(jpeg())
    state = workspace_dir / "active_state.json"
    state.write_text(json.dumps({"version": 1, "pipelines": [
        {"pipeline_id": "pipe_abc123", "name": "pic", "video_reference": str(workspace_dir / "photo.jpg"),
         "model_id": "builtin/faces"}]}))
    mgr = PipelineManager(lambda: backend, state, settings)
    restore = BackgroundRestore(mgr, backoff=(0.05, 0.05, 0.05))  # the start-up path, with retries on failure
    restore.start()
    restored = await asyncio.wait_for(restore.wait(), 10)
    assert [(h.name, h.status) for h in restored] == [("pic", "error")] and STILL in (restored[0].error or "")
    assert opened(backend) == [] and "could not be restored" not in caplog.text  # not tried, so not retried


async def test_stream_urls_into_the_lan_never_reach_the_backend(reg, ctx, backend, port_watch: PortWatch):
    for ref in (f"rtsp://admin:pw@127.0.0.1:{port_watch.port}/live", f"http://localhost:{port_watch.port}/mjpeg",
                "rtmp://169.254.169.254/app", "rtsp://192.168.1.1/"):
        res = await reg.execute("start_pipeline", {"video_reference": ref, "pipeline_name": "p",
                                                   "model_id": "builtin/faces"}, ctx)
        assert res.is_error and "local/private address" in res.text and "pw" not in res.text
    assert opened(backend) == [] and port_watch.accepted == 0


@pytest.mark.slow
async def test_on_the_real_backend_a_camera_port_is_opened_and_its_hosts_other_ports_are_not(
    reg, settings, workspace_dir, direct_backend, port_watch: PortWatch, other_port_watch: PortWatch
):
    mgr = PipelineManager(lambda: direct_backend, workspace_dir / "active_state.json", settings)
    ctx = ToolContext(settings=settings, services=Services(backend=BackendProvider.of(direct_backend), pipelines=mgr))
    register_cameras(workspace_dir, door=f"rtsp://127.0.0.1:{port_watch.port}/live")
    try:
        other = await reg.execute("start_pipeline", {"video_reference": f"rtsp://127.0.0.1:{other_port_watch.port}/live",
                                                     "pipeline_name": "sneak", "model_id": "builtin/faces"}, ctx)
        assert other.is_error and "local/private" in other.text
        await reg.execute("start_pipeline", {"video_reference": "door", "pipeline_name": "door",
                                             "model_id": "builtin/faces"}, ctx)
        deadline = time.monotonic() + 30
        while port_watch.accepted == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert port_watch.accepted >= 1 and other_port_watch.accepted == 0  # OpenCV dialled the camera, and only it
        video = make_video(workspace_dir / "clip.mp4")
        assert not (await reg.execute("start_pipeline", {"video_reference": str(video), "pipeline_name": "clip",
                                                         "model_id": "builtin/faces"}, ctx)).is_error
    finally:
        await mgr.stop_all()


async def test_an_image_outside_the_allowed_folders_is_refused_as_outside_not_sniffed(reg, ctx, tmp_path):
    from tests.handlers.transport.test_files import jpeg

    (tmp_path / "private.jpg").write_bytes(jpeg())
    res = await reg.execute("start_pipeline", {"video_reference": str(tmp_path / "private.jpg"), "pipeline_name": "p",
                                               "model_id": "builtin/faces"}, ctx)
    assert res.is_error and "VISION_AGENT_MEDIA_DIRS" in res.text and "still image" not in res.text

"""The webrtc backend: a pipeline streamed over WebRTC to the real local inference server, end to end; a server
without WebRTC named in one line at start; what each kind of source becomes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.backends import make_backend
from bot.backends.base import BackendError, WorkflowRef
from bot.backends.webrtc.backend import ENDPOINT, WebRtcBackend, webrtc_source
from bot.backends.workflows import detection_workflow
from bot.config import load_settings
from bot.pipelines.request import StartRequest
from tests.bot.monitor_helpers import run_to_end
from tests.fixtures.common import free_port
from tests.fixtures.inference import crossing_line


@pytest.mark.slow
async def test_webrtc_pipeline_runs_a_video_end_to_end_on_the_local_server(
    inference_server: str, base_env: dict[str, str], face_video: Path, tmp_path: Path
) -> None:
    """`vision-agent inference-server` serves WebRTC offline: a pipeline started with backend=webrtc (the bot's
    default stays direct) uploads the file, every frame comes back on the data channel with its annotated image,
    and the line counts both crossings."""
    from bot.pipelines.manager import PipelineManager

    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server})
    assert settings.inference.backend == "direct"
    assert isinstance(make_backend(settings.model_copy(update={"inference": settings.inference.model_copy(
        update={"backend": "webrtc"})})), WebRtcBackend)  # VISION_AGENT_BACKEND=webrtc builds the same backend
    state = tmp_path / "active_state.json"
    mgr = PipelineManager(lambda: make_backend(settings), state, settings)
    results, frames = [], []
    # Frames are made when read, and a newer result seals an unread one: read each while it is the newest.
    mgr.add_result_listener(lambda h, r: (results.append(r), frames.append(r.frame)))
    try:
        with pytest.raises(BackendError, match="unknown backend 'grpc': use one of direct, http, webrtc"):
            await mgr.start(StartRequest(str(face_video), "door", model_id="builtin/faces", backend="grpc"))
        started = await mgr.start(StartRequest(str(face_video), "door", workflow_spec=detection_workflow("builtin/faces",
                                  line=crossing_line()), backend="webrtc"))
        assert started.backend == "webrtc" and started.status in ("starting", "running")
        assert json.loads(state.read_text())["pipelines"][0]["backend"] == "webrtc"  # restarted on webrtc too
        assert isinstance(await mgr.results("door", 1), list)  # read from the backend it runs on, not the default
        await run_to_end(mgr, "door", timeout=120)
        final = await mgr.status("door")
    finally:
        await mgr.stop_all()
        await mgr.close()
    assert final.status == "finished", final.error
    assert len(results) == 60 == final.frames  # files are not dropped: every frame of the 60
    last = results[-1]
    assert (last.values.get("count_in"), last.values.get("count_out")) == (1, 1)
    assert all(f and f.startswith(b"\xff\xd8") for f in frames)
    assert {d.class_name for r in results for d in r.detections} == {"face"}
    assert [r.frame_id for r in results] == sorted(r.frame_id for r in results)


@pytest.fixture
async def server_without_webrtc() -> AsyncIterator[str]:
    """An inference server of a build without the WebRTC route: it validates workflows, the rest is 404."""

    async def validate(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/workflows/validate", validate)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_a_server_without_webrtc_is_named_in_one_line_at_start(
    server_without_webrtc: str, base_env: dict[str, str], face_video: Path
) -> None:
    backend = WebRtcBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": server_without_webrtc}))
    with pytest.raises(BackendError) as err:
        await backend.start_pipeline("p1", "door", str(face_video), WorkflowRef(workflow_spec=detection_workflow("builtin/faces")))
    line = str(err.value)
    assert "\n" not in line and "does not serve WebRTC" in line and "VISION_AGENT_BACKEND=http" in line
    assert await backend.list_pipelines() == []  # nothing half-started
    unsafe = {**detection_workflow("builtin/faces"), "steps": [{"type": "roboflow_core/webhook_sink@v1", "name": "x"}]}
    with pytest.raises(BackendError, match="refused"):  # the block policy comes first, as for every backend
        await backend.start_pipeline("p2", "door", str(face_video), WorkflowRef(workflow_spec=unsafe))
    await backend.close()


def test_sources_the_server_pulls_and_sources_sent_from_here(tmp_path: Path) -> None:
    from inference_sdk.webrtc.sources import MJPEGSource, RTSPSource, VideoFileSource, WebcamSource

    video = tmp_path / "v.mp4"
    video.write_bytes(b"not decoded here")
    assert isinstance(webrtc_source("rtsp://user:pw@10.0.0.5/s1", None), RTSPSource)
    assert isinstance(webrtc_source("http://10.0.0.5/mjpg", None), MJPEGSource)
    assert isinstance(webrtc_source("0", None), WebcamSource)
    paced = webrtc_source(str(video), 15)
    assert isinstance(paced, VideoFileSource) and paced.realtime_processing
    assert not webrtc_source(str(video), None).realtime_processing  # a file without max_fps: every frame, fast
    for bad, words in (("udp://user:pw@10.0.0.5:5000", "cannot open"), (str(tmp_path / "gone.mp4"), "not found")):
        with pytest.raises(BackendError, match=words) as err:
            webrtc_source(bad, None)
        assert "pw" not in str(err.value) and "\n" not in str(err.value)


async def test_sessions_go_to_the_least_loaded_server_counting_the_sessions_open_from_here(
    base_env: dict[str, str], face_video: Path
) -> None:
    """Two servers (fakes speaking the routes placement uses): one already lists a pipeline. A server's list does
    not show its WebRTC workers, so the sessions this backend holds open count as its load too."""
    import asyncio
    import time

    offers: list[str] = []
    release = asyncio.Event()

    def server(listed: list[str]) -> web.Application:
        async def pipelines(request: web.Request) -> web.Response:
            return web.json_response({"status": "success", "pipelines": listed})

        async def validate(request: web.Request) -> web.Response:
            return web.json_response({"status": "ok"})

        async def offer(request: web.Request) -> web.Response:
            if not await request.json():
                return web.json_response({"message": "no offer"}, status=422)  # the start's WebRTC check
            offers.append(request.host)
            await release.wait()  # the session stays starting (held) until the test has placed all three
            return web.json_response({"message": "no worker here"}, status=503)

        app = web.Application()
        app.router.add_get("/inference_pipelines/list", pipelines)
        app.router.add_post("/workflows/validate", validate)
        app.router.add_post(ENDPOINT, offer)
        return app

    runners, urls = [], []
    for listed in (["other-client"], []):
        runner = web.AppRunner(server(listed))
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        urls.append(f"http://127.0.0.1:{port}")
    backend = WebRtcBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": ",".join(urls)}))
    busy, idle = (u.removeprefix("http://") for u in urls)
    try:
        placed = []
        for i in range(3):
            handle = await backend.start_pipeline(f"p{i}", f"cam{i}", str(face_video),
                                                  WorkflowRef(workflow_spec=detection_workflow("builtin/faces")))
            placed.append(handle.server)  # what status lines show: ":port"
        deadline = time.monotonic() + 60
        while len(offers) < 3:
            assert time.monotonic() < deadline, offers
            await asyncio.sleep(0.1)
        # idle (0), then a tie (1 listed, 1 held) to the earlier server, then idle again (1 held against 2)
        assert placed == [f":{idle.split(':')[1]}", f":{busy.split(':')[1]}", f":{idle.split(':')[1]}"]
        assert sorted(offers) == sorted([idle, busy, idle])
    finally:
        release.set()
        await backend.close()
        for runner in runners:
            await runner.cleanup()


def test_a_webrtc_pipelines_frames_tell_its_cameras_faults() -> None:
    """The direct and http pipelines feed their camera watch each frame; a webrtc one fed it nothing, so its camera
    never went `no video`, frozen or black in status. Its data channel's drawn frames now tell the picture, and a
    silence the loss, as the http backend's results do."""
    import base64

    import cv2
    import numpy as np

    from bot.backends.faults.watch import CameraWatch
    from bot.backends.webrtc.pipeline import WebRtcPipeline

    now = [1_800_000_000.0]
    pipe = WebRtcPipeline("w1", "gate", "rtsp://gate.local/live", "builtin/people", 8, None, None)
    pipe.watch = CameraWatch(True, clock=lambda: now[0], remote=True)
    black = base64.b64encode(cv2.imencode(".jpg", np.zeros((240, 320, 3), np.uint8))[1].tobytes()).decode()
    for _ in range(30):  # 15 s of a black picture at 2 fps
        now[0] += 0.5
        pipe._on_data({"annotated": {"type": "base64", "value": black}}, None)
    assert pipe.status == "running" and pipe.frames == 30
    assert "black" in {f.kind for f in pipe.handle().faults if f.ended is None}
    pipe.pause()  # a live camera's results are dropped while paused: no video loss when it resumes
    now[0] += 60
    pipe.resume()
    assert not [f for f in pipe.handle().faults if f.kind == "video"]
    now[0] += 60  # the data channel falls silent
    [lost] = [f for f in pipe.handle().faults if f.kind == "video"]
    assert lost.ended is None and lost.text.startswith("no video for")

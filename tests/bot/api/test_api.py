"""The REST API over a real aiohttp server on 127.0.0.1: the token gate, pipelines, frames, rules, routes, events."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from PIL import Image

from bot.api.openapi import document
from bot.api.server import OFF, ApiServer
from bot.backends.provider import BackendProvider
from bot.config import load_settings
from bot.runtime import Runtime
from tests.fakes.waits import patience
from tests.fixtures.inference import make_video
from tests.tools.fake_backend import FakeBackend, result

TOKEN = "api-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CAMERAS = "| Name | URL | Location |\n|---|---|---|\n| dock | rtsp://admin:hunter2@10.0.0.5/s1 | Loading dock |\n"


def jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 10, 10)).save(buf, "JPEG")
    return buf.getvalue()


class Api:
    """A runtime on the fake backend, the API server in front of it, and a client session."""

    def __init__(self, rt: Runtime, backend: FakeBackend, base: str, http: aiohttp.ClientSession) -> None:
        self.rt, self.backend, self.base, self.http = rt, backend, base, http

    async def call(self, method: str, path: str, headers: dict[str, str] | None = AUTH,
                   **kw: Any) -> tuple[int, Any]:
        async with self.http.request(method, self.base + path, headers=headers, **kw) as resp:
            if resp.content_type == "application/json":
                return resp.status, await resp.json()
            return resp.status, await resp.read()


async def started(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    """A POST /api/pipelines answer (`starting`: the detector loads in the background) followed with GET until the
    pipeline runs or failed; the pipeline as GET then shows it."""
    pipeline = body["pipeline"]
    deadline = time.monotonic() + patience(30)
    while pipeline["status"] == "starting":
        assert time.monotonic() < deadline, pipeline
        await asyncio.sleep(0.02)
        status, got = await api.call("GET", f"/api/pipelines/{pipeline['pipeline_id']}")
        assert status == 200, got
        pipeline = got["pipeline"]
    return pipeline


async def serve_api(env: dict[str, str], workspace: Path) -> AsyncIterator[Api]:
    async for api in run_api(load_settings(env), CAMERAS, background=False):
        yield api


async def run_api(settings: Any, cameras: str, background: bool, backend: Any = None) -> AsyncIterator[Api]:
    """A runtime on the fake backend (or `backend`) over `cameras` (CAMERAS.md), its REST API on a free port, a client
    session; `background`: with its scheduler and restore, as `vision-agent api` runs it."""
    (settings.workspace / "CAMERAS.md").write_text(cameras)
    backend = FakeBackend() if backend is None else backend
    rt = Runtime(settings, background=background)
    rt.backend = BackendProvider.of(backend)
    await rt.start()
    server = ApiServer(rt, "127.0.0.1", 0)
    port = await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield Api(rt, backend, f"http://127.0.0.1:{port}", http)
    finally:
        await server.stop()
        await rt.close()


@pytest.fixture
async def api(base_env, workspace_dir: Path) -> AsyncIterator[Api]:
    async for a in serve_api(dict(base_env, VISION_AGENT_API_TOKEN=TOKEN), workspace_dir):
        yield a


def operations() -> list[tuple[str, str]]:
    return [(method.upper(), path.replace("{id}", "x")) for path, ops in document()["paths"].items() for method in ops]


async def test_every_endpoint_refuses_a_missing_or_wrong_token(api: Api) -> None:
    wrong = [None, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"},
             {"Authorization": f"Bearer {TOKEN}x"}]
    ops = operations() + [("GET", "/api/nothing-here")]
    assert len(ops) >= 15
    for method, path in ops:
        for headers in wrong:
            status, body = await api.call(method, path, headers=headers, json={})
            assert status == 401, (method, path, headers)
            assert body["status"] == "error" and "Authorization: Bearer" in body["error"]
    assert not api.backend.calls  # nothing ran


async def test_without_a_token_configured_the_api_is_off(base_env, workspace_dir: Path) -> None:
    async for a in serve_api(base_env, workspace_dir):
        status, body = await a.call("GET", "/api/pipelines")
        assert (status, body) == (401, {"status": "error", "error": OFF})
        status, doc = await a.call("GET", "/openapi.json", headers=None)
        assert status == 200 and doc["openapi"].startswith("3.")


def test_a_public_bind_without_a_token_is_refused(settings) -> None:
    class Host:
        pass

    host: Any = Host()
    host.settings = settings
    with pytest.raises(ValueError, match="VISION_AGENT_API_TOKEN"):
        ApiServer(host, "0.0.0.0", 0)


async def test_pipelines_start_list_frame_pause_resume_stop(api: Api, workspace_dir: Path) -> None:
    video = workspace_dir / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "name": "yard", "fps": 5})
    assert status == 201, body
    pid = body["pipeline"]["pipeline_id"]
    assert body["pipeline"]["name"] == "yard" and body["pipeline"]["status"] == "starting"
    assert (await started(api, body))["status"] == "running"
    assert api.backend.calls[-1][1]["video_reference"] == str(video)
    status, body = await api.call("GET", "/api/pipelines")
    assert [p["pipeline_id"] for p in body["pipelines"]] == [pid]
    status, body = await api.call("GET", "/api/pipelines/yard/frame")
    assert status == 404 and "no frame yet" in body["error"]
    frame = jpeg()
    api.backend.emit(pid, result({"person": 2}, frame=frame))
    status, data = await api.call("GET", f"/api/pipelines/{pid}/frame")
    assert status == 200 and data == frame and Image.open(io.BytesIO(data)).format == "JPEG"
    for verb, after in (("pause", "paused"), ("resume", "running"), ("stop", "stopped")):
        status, body = await api.call("POST", f"/api/pipelines/{pid}/{verb}")
        assert status == 200 and body["pipeline"]["status"] == after
    status, body = await api.call("GET", "/api/pipelines/nope")
    assert status == 404 and "no pipeline 'nope'" in body["error"]


async def test_a_pipelines_counts_and_cannot_count_line_are_in_its_status_as_in_vision_status(
    api: Api, workspace_dir: Path
) -> None:
    """Field test (issue 21): over REST a counting pipeline showed frames and fps only, never what it counted nor
    that people were too small for it to count, which `/vision status` says."""
    video = workspace_dir / "substream.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "name": "walk"})
    assert status == 201 and body["pipeline"]["counted"] is None and body["pipeline"]["cannot_count"] is None
    await started(api, body)
    small = {"person_px": 15.0, "settled": True, "smallest_px": 24.0, "blind_seconds": 0.0}
    api.backend.emit(body["pipeline"]["pipeline_id"], result({"person": 2}, count_in=3, count_out=2, camera=small))
    for path in ("/api/pipelines/walk", "/api/pipelines"):
        status, body = await api.call("GET", path)
        [got] = [body["pipeline"]] if "pipeline" in body else body["pipelines"]
        assert got["counted"]["count_in"] == 3 and got["counted"]["count_out"] == 2, got
        assert got["cannot_count"].startswith("cannot count reliably: people here are about 15 px tall")
        assert "counted in 3 / out 2" in got["summary"] and got["cannot_count"] in got["summary"]


async def test_rest_refusals_and_notes_name_the_rest_way_to_see_a_frame(api: Api, workspace_dir: Path) -> None:
    """Field test (issue 21): REST errors said "/vision snapshot shows a frame", a command a REST caller cannot send."""
    video = make_video(workspace_dir / "sub.mp4", size=(320, 180), frames=4)
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "line": "900,0,900,500"})
    assert status == 400 and "lies outside this stream's 320x180 frames" in body["error"], body
    assert "GET /api/pipelines/{id}/frame shows a frame" in body["error"] and "/vision" not in body["error"]
    # 4:3 points on a 16:9 sub-stream: the start note says where to check them, the REST way too
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "line": "320,0,320,480@640x480"})
    assert status == 201 and "stretched onto this stream's 320x180 frames" in body["runs"], body
    assert "GET /api/pipelines/{id}/frame" in body["runs"] and "/vision" not in body["runs"]


async def test_a_pipeline_restarted_on_another_server_says_so_under_failover(api: Api, workspace_dir: Path) -> None:
    """Field test (issue 21): the REST field `moved`, beside a line pipeline's points, read as "the line was moved"."""
    video = workspace_dir / "door.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    status, body = await api.call("POST", "/api/pipelines", json={"source": str(video), "name": "door", "line": "5,0,5,9"})
    pid = body["pipeline"]["pipeline_id"]
    assert status == 201 and body["pipeline"]["failover"] is None and (await started(api, body))["status"] == "running"
    note = "restarted on :9002 at 14:03 UTC (:9001 stopped answering), counts carry on"
    api.backend.handles[pid] = api.backend.handles[pid].with_(server=":9002", failover=note)
    status, body = await api.call("GET", "/api/pipelines/door")
    got = body["pipeline"]
    assert got["server"] == ":9002" and got["failover"] == note and note in got["summary"]
    assert not any("moved" in key for key in got)  # nothing beside the line's fields reads as the line moving


@pytest.mark.parametrize(("source", "why"), [
    ("http://10.0.0.9/video.mp4", "local/private address"),
    ("/etc/passwd", "outside the folders I may read"),
    ("file:///etc/passwd", "not a supported video source"),
    ("cam1", "is neither a camera nor a video file: a camera name is a row of"),  # README's example, unregistered
])
async def test_start_refuses_what_slack_refuses(api: Api, source: str, why: str) -> None:
    status, body = await api.call("POST", "/api/pipelines", json={"source": source})
    assert status == 400 and why in body["error"], body
    assert not any(c[0] == "start_pipeline" for c in api.backend.calls)


@pytest.mark.parametrize("payload", [{"source": ""}, {"source": "x", "fps": -1}, {"source": "x", "shell": "rm"},
                                     {"source": "x", "name": "../../etc"}, ["source"], "null"])
async def test_bad_bodies_are_one_json_line(api: Api, payload: Any) -> None:
    status, body = await api.call("POST", "/api/pipelines", json=payload)
    assert status == 400 and body["status"] == "error" and body["error"]


async def test_broken_json_and_unknown_paths(api: Api) -> None:
    status, body = await api.call("POST", "/api/pipelines", data=b"{not json", headers={**AUTH})
    assert status == 400 and body["error"] == "the body must be a JSON object"
    status, body = await api.call("GET", "/api/nothing-here")
    assert status == 404 and body["status"] == "error"
    status, body = await api.call("PATCH", "/api/pipelines")
    assert status == 405 and body["status"] == "error"


async def test_cameras_are_listed_with_credentials_masked(api: Api) -> None:
    status, body = await api.call("GET", "/api/cameras")
    assert status == 200 and body["cameras"] == [{"name": "dock", "source": "rtsp://admin:***@10.0.0.5/s1"}]
    assert "hunter2" not in str(body)


async def test_rules_add_list_remove(api: Api) -> None:
    status, body = await api.call("POST", "/api/rules", json={"camera": "dock", "rule": "count person>3",
                                                              "cooldown_seconds": 60})
    assert status == 201 and body["rule"]["id"] == "count_over:person>3"
    status, body = await api.call("GET", "/api/rules", params={"camera": "dock"})
    assert [(r["camera"], r["id"], r["cooldown_seconds"]) for r in body["rules"]] == [
        ("dock", "count_over:person>3", 60)]
    status, body = await api.call("POST", "/api/rules", json={"camera": "dock", "rule": "explode"})
    assert status == 400 and "Usage" in body["error"]
    status, body = await api.call("DELETE", "/api/rules", params={"camera": "dock", "id": "count_over:person>3"})
    assert status == 200
    status, body = await api.call("DELETE", "/api/rules", params={"camera": "dock", "id": "count_over:person>3"})
    assert status == 404
    assert api.rt.monitor.rules() == []


async def test_routes_set_list_remove(api: Api) -> None:
    status, body = await api.call("PUT", "/api/routes", json={"channel": "C0ALERTS", "camera": "dock"})
    assert status == 200 and body["routes"] == {"dock": "C0ALERTS"}
    assert api.rt.router.channel_for("dock") == "C0ALERTS"
    status, body = await api.call("DELETE", "/api/routes", params={"camera": "dock"})
    assert status == 200 and body["routes"] == {}
    status, body = await api.call("DELETE", "/api/routes", params={"camera": "dock"})
    assert status == 404


async def test_a_routes_verify_setting_is_listed_beside_its_channel(api: Api) -> None:
    status, body = await api.call("PUT", "/api/routes", json={"channel": "C0ALERTS", "camera": "gate", "verify": "hold"})
    assert status == 200 and body["verify"] == {"gate": "hold"}
    await api.call("PUT", "/api/routes", json={"channel": "C0ALERTS", "camera": "dock"})  # follows monitoring.verify
    status, body = await api.call("GET", "/api/routes")
    assert status == 200 and body["routes"] == {"gate": "C0ALERTS", "dock": "C0ALERTS"}
    assert body["verify"] == {"gate": "hold"}


async def test_events_since_and_by_camera(api: Api) -> None:
    now = time.time()
    for camera, age, text in (("dock", 7200, "old"), ("dock", 60, "new"), ("gate", 30, "gate one")):
        api.rt.events.append({"camera": camera, "rule": "line_crossed", "event_type": "line_crossed",
                              "text": text, "time": now - age})
    status, body = await api.call("GET", "/api/events", params={"since": "3600"})
    assert status == 200 and [e["text"] for e in body["events"]] == ["new", "gate one"]
    status, body = await api.call("GET", "/api/events", params={"since": "3600", "camera": "dock"})
    assert [e["text"] for e in body["events"]] == ["new"]
    status, body = await api.call("GET", "/api/events", params={"limit": "1"})
    assert [e["text"] for e in body["events"]] == ["gate one"]
    status, body = await api.call("GET", "/api/events", params={"since": "yesterday-ish"})
    assert status == 400 and "2h" in body["error"] and "ISO" in body["error"]


@pytest.mark.parametrize(("limit", "camera"), [(7, None), (50, "dock"), (1, "gate")])
async def test_paging_after_an_id_while_events_keep_arriving_skips_none_and_repeats_none(
    api: Api, limit: int, camera: str | None
) -> None:
    """A consumer pages with `after` = the last page's `next` while a pipeline thread keeps appending: it gets
    every event (of its camera) once, in id order; `more` says when to ask again at once."""
    log = api.rt.events
    for i in range(5):  # before the consumer starts: `next` of a plain read starts after them
        log.append({"camera": "dock", "rule": "line_crossed", "event_type": "line_crossed", "text": f"old {i}"})
    status, body = await api.call("GET", "/api/events", params={"limit": "2"})
    assert status == 200 and body["next"] == body["events"][-1]["id"] and len(body["next"]) == 12
    start = body["next"]
    done = threading.Event()

    def pipeline() -> None:
        for i in range(300):
            log.append({"camera": ("dock", "gate", "yard")[i % 3], "rule": "line_crossed",
                        "event_type": "line_crossed", "text": f"crossing {i}"})
            if i % 25 == 0:
                time.sleep(0.01)
        done.set()

    writer = threading.Thread(target=pipeline)
    writer.start()
    got: list[dict[str, Any]] = []
    after, finished = start, False
    while not finished:
        finished = done.is_set()  # one more full read after the writer is done
        params = {"after": after, "limit": str(limit), **({"camera": camera} if camera else {})}
        status, body = await api.call("GET", "/api/events", params=params)
        assert status == 200 and len(body["events"]) <= limit
        got += body["events"]
        assert body["next"] >= after
        after = body["next"]
        finished = finished and not body["more"]
    writer.join()
    expected = [e for e in log.page(int(start), 10_000)[0] if camera is None or e["camera"] == camera]
    assert [e["id"] for e in got] == [e["id"] for e in expected]
    assert len(expected) == (300 if camera is None else 100)


async def test_events_after_must_be_an_event_id(api: Api) -> None:
    status, body = await api.call("GET", "/api/events", params={"after": "yesterday"})
    assert status == 400 and "after" in body["error"]


async def test_an_alert_clip_is_served_by_its_id_and_nothing_else_is(api: Api) -> None:
    clips = api.rt.pipelines.clips
    clips.directory.mkdir(parents=True, exist_ok=True)
    (clips.directory / "dock-20261123-101500-ab12cd.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 clip")
    (clips.directory / "dock-20261123-101500-ab12cd.json").write_text(json.dumps(
        {"camera": "dock", "rule": "line_crossed", "event_at": 2.0, "seconds": 5.0, "fps": 5.0, "frames": 25,
         "codec": "h264", "bytes": 20}))
    status, body = await api.call("GET", "/api/clips/dock-20261123-101500-ab12cd")
    assert status == 200 and body.startswith(b"\x00\x00\x00\x18ftyp")
    (api.rt.settings.workspace / "secret.mp4").write_bytes(b"not yours")
    status, body = await api.call("GET", "/api/clips/nope")
    assert status == 404 and "no such clip" in body["error"]
    for bad in ("..%2Fsecret", "..", "dock-20261123-101500-ab12cd.json", "%2E%2E%2Fsecret"):
        status, body = await api.call("GET", f"/api/clips/{bad}")
        assert status == 404 and body["status"] == "error", bad
    status, _ = await api.call("GET", "/api/clips/dock-20261123-101500-ab12cd", headers=None)
    assert status == 401

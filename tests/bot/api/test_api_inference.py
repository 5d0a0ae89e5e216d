"""POST /api/inference is the model's run_inference tool over HTTP: the image as the body (or the tool's arguments as
JSON), the same checks and refusals, the boxes back as JSON. Bodies up to the image size limit, not the API's 1 MB."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from PIL import Image

from bot.config import load_settings
from tests.bot.api.test_api import AUTH, TOKEN, Api, jpeg, run_api
from tests.tools.fake_backend import FakeBackend, result

CAMERAS = "| Name | URL |\n|---|---|\n| dock | rtsp://10.0.0.5/s1 |\n"


@pytest.fixture
async def api(base_env: dict[str, str], workspace_dir: Path) -> AsyncIterator[Api]:
    (workspace_dir / "config.yaml").write_text("slack:\n  max_image_bytes: 3000000\n")
    backend = FakeBackend(single=result({"person": 3}, frame_id=None))
    async for a in run_api(load_settings(dict(base_env, VISION_AGENT_API_TOKEN=TOKEN)), CAMERAS, False, backend):
        yield a


def _png(size: tuple[int, int], noisy: bool = False) -> bytes:
    buf = io.BytesIO()
    image = Image.effect_noise(size, 90).convert("RGB") if noisy else Image.new("RGB", size, (40, 90, 160))
    image.save(buf, "PNG")
    return buf.getvalue()


async def _post_image(api: Api, body: bytes, params: dict[str, str], kind: str = "image/png") -> tuple[int, dict]:
    async with api.http.post(api.base + "/api/inference", data=body, params=params,
                             headers={**AUTH, "Content-Type": kind}) as resp:
        return resp.status, await resp.json()


async def test_an_image_body_runs_the_tool_and_answers_its_summary_and_boxes(api: Api) -> None:
    image = _png((64, 48))
    status, body = await _post_image(api, image, {"model_id": "builtin/people", "confidence": "0.6"})
    assert status == 200, body
    assert body["counts"] == {"person": 3} and len(body["detections"]) == 3
    assert body["detections"][0] == {"class_name": "person", "confidence": 0.9, "xyxy": [0.0, 0.0, 5.0, 5.0],
                                     "tracker_id": 1}
    assert body["image_size"] == [640, 480] and "3 detections: 3 person" in body["summary"]
    assert "frame" not in body  # JSON carries the drawn JPEG only when asked
    call = api.backend.calls[-1][1]
    assert call["image"] == image and call["model_id"] == "builtin/people" and call["confidence"] == 0.6


async def test_json_arguments_are_the_tools_and_include_frame_adds_the_jpeg(api: Api) -> None:
    data = base64.b64encode(jpeg()).decode()
    status, body = await api.call("POST", "/api/inference", json={"image": data, "model_id": "builtin/faces",
                                                                 "include_frame": True})
    assert status == 200, body
    assert base64.b64decode(body["frame"]) == b"\xff\xd8\xffframe"
    assert api.backend.calls[-1][1]["model_id"] == "builtin/faces"
    assert api.backend.calls[-1][1]["confidence"] is None  # the model's own default, as a pipeline's


@pytest.mark.parametrize(("arguments", "said"), [
    ({}, "Say what to run"),
    ({"model_id": "builtin/people", "confidence": "2"}, "confidence"),
    ({"model_id": "builtin/people", "colour": "red"}, "colour"),
])
async def test_what_the_tool_refuses_is_one_line_and_runs_nothing(api: Api, arguments, said) -> None:
    status, body = await _post_image(api, _png((64, 48)), arguments)
    assert status == 400 and said in body["error"] and "\n" not in body["error"], body
    assert not api.backend.calls


async def test_a_body_that_is_no_image_or_no_object_is_refused_in_one_line(api: Api) -> None:
    status, body = await _post_image(api, b"", {"model_id": "builtin/people"})
    assert status == 400 and "no image" in body["error"], body
    status, body = await _post_image(api, b"not an image at all", {"model_id": "builtin/people"})
    assert status == 400 and "JPEG" in body["error"], body
    status, body = await api.call("POST", "/api/inference", json=["image"])
    assert status == 400 and "JSON object" in body["error"], body
    status, body = await _post_image(api, _png((8, 8)), {"model_id": "builtin/people", "image": "x.png"})
    assert status == 400 and "drop `image`" in body["error"], body
    assert not api.backend.calls


async def test_an_image_over_the_json_apis_1_mb_is_taken_and_one_over_the_image_limit_refused(api: Api) -> None:
    big = _png((1100, 900), noisy=True)  # ~3 MB of noise: over the JSON API's 1 MB, under the 3 MB image limit
    assert 1024 * 1024 < len(big) < 3_000_000
    status, body = await _post_image(api, big, {"model_id": "builtin/people"})
    assert status == 200, body
    status, body = await _post_image(api, _png((1500, 1300), noisy=True), {"model_id": "builtin/people"})
    assert status == 413 and "KB" in body["error"] and "smaller" in body["error"], body
    async with aiohttp.ClientSession() as http:  # the JSON API's own paths keep their 1 MB
        async with http.post(api.base + "/api/rules", data=b"{" + b" " * (2 * 1024 * 1024) + b"}",
                             headers={**AUTH, "Content-Type": "application/json"}) as resp:
            assert resp.status == 413
    assert len(api.backend.calls) == 1


async def test_a_backend_failure_is_the_tools_one_line(base_env: dict[str, str]) -> None:
    backend = FakeBackend(fail_single="the inference server at :9001 is not answering: start it")
    async for api in run_api(load_settings(dict(base_env, VISION_AGENT_API_TOKEN=TOKEN)), CAMERAS, False, backend):
        status, body = await _post_image(api, _png((64, 48)), {"model_id": "builtin/people"})
        assert status == 400 and body["error"] == "the inference server at :9001 is not answering: start it", body

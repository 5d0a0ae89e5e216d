"""DirectBackend: single images through the in-process workflow engine with the offline detectors."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.direct.backend import DirectBackend
from bot.backends.workflows import detection_workflow
from tests.fixtures.common import free_port

pytestmark = pytest.mark.slow


async def test_astronaut_face_found_and_frame_annotated(direct_backend, astronaut_jpeg):
    result = await direct_backend.run_single(astronaut_jpeg, model_id="builtin/faces")
    assert result.counts() == {"face": 1}
    x1, y1, x2, y2 = result.detections[0].xyxy
    assert 150 < x1 < 200 and 40 < y1 < 90 and 250 < x2 < 300 and 140 < y2 < 190
    assert 0 < result.detections[0].confidence <= 1
    assert result.image_size == (512, 512)
    frame = cv2.imdecode(np.frombuffer(result.frame, np.uint8), cv2.IMREAD_COLOR)
    original = cv2.imdecode(np.frombuffer(astronaut_jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert frame.shape == original.shape
    # the box is drawn: pixels on the box edge changed, far-away pixels did not (beyond JPEG noise)
    edge = np.abs(frame[66:160, 176:179].astype(int) - original[66:160, 176:179].astype(int)).mean()
    far = np.abs(frame[400:500, 400:500].astype(int) - original[400:500, 400:500].astype(int)).mean()
    assert edge > 20 and far < 5


async def test_inline_spec_and_confidence_filter(direct_backend, astronaut_jpeg):
    spec = detection_workflow("builtin/faces", confidence=0.99, track=False, annotate=False)
    result = await direct_backend.run_single(astronaut_jpeg, workflow_spec=spec)
    assert result.detections == ()
    assert result.frame is not None  # drawn by supervision when the workflow has no visualization


async def test_undecodable_image_is_a_clear_error(direct_backend):
    with pytest.raises(BackendError, match="could not be decoded"):
        await direct_backend.run_single(b"not an image", model_id="builtin/faces")


async def test_roboflow_model_offline_fails_fast_with_hint(settings, astronaut_jpeg, monkeypatch, direct_backend):
    # Roboflow's API "moved" to a closed local port: the same refusal an offline machine gets, even in CI.
    monkeypatch.setattr("bot.backends.direct.engine._api_base_url", lambda: f"https://127.0.0.1:{free_port()}")
    backend = DirectBackend(settings)
    start = time.monotonic()
    with pytest.raises(BackendError) as err:
        await backend.run_single(astronaut_jpeg, model_id="my-ws/cars/3")
    assert time.monotonic() - start < 20  # fast: no minute of retries against an unreachable host
    msg = str(err.value)
    assert "my-ws/cars/3" in msg and "ROBOFLOW_API_KEY" in msg and "builtin/faces" in msg


async def test_invalid_spec_gives_problems_and_corrected_spec_deploys(direct_backend, face_video):
    spec = detection_workflow("builtin/faces")
    spec["steps"][1]["detections"] = "$steps.detectr.predictions"
    problems = await direct_backend.validate_workflow(spec)
    assert problems and any("detectr" in p for p in problems) and all(len(p) < 400 for p in problems)
    ghost = {**spec, "steps": [*spec["steps"], {"type": "roboflow_core/no_such_block@v9", "name": "ghost"}]}
    assert "not on this bot's allowlist" in (await direct_backend.validate_workflow(ghost))[0]  # before any compiler
    with pytest.raises(BackendError, match="the workflow is invalid"):
        await direct_backend.start_pipeline("bad-spec", "door", str(face_video), WorkflowRef(workflow_spec=spec))
    fixed = detection_workflow("builtin/faces")
    assert await direct_backend.validate_workflow(fixed) == []
    handle = await direct_backend.start_pipeline("good-spec", "door", str(face_video), WorkflowRef(workflow_spec=fixed))
    assert handle.status in ("running", "finished")
    assert (await direct_backend.stop_pipeline("good-spec")).status in ("stopped", "finished")


async def test_custom_python_block_refused_with_how_to_enable(direct_backend, astronaut_jpeg, face_video):
    spec = detection_workflow("builtin/faces", track=False)
    spec["dynamic_blocks_definitions"] = [
        {"type": "DynamicBlockDefinition", "manifest": {"type": "ManifestDescription", "block_type": "Shell"},
         "code": {"type": "PythonCode", "run_function_code": "import os\ndef run(self):\n    os.system('id')"}}
    ]
    with pytest.raises(BackendError, match="allow_custom_python: true"):
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=spec)
    with pytest.raises(BackendError, match="custom Python"):
        await direct_backend.start_pipeline("py-1", "x", str(face_video), WorkflowRef(workflow_spec=spec))
    assert any("Shell" in p for p in await direct_backend.validate_workflow(spec))


async def test_describe_blocks_in_process_has_plugin_blocks(direct_backend):
    blocks = await direct_backend.describe_blocks()
    by_type = {b["manifest_type_identifier"]: b for b in blocks}
    face = by_type["vision_agent/haar_face_detector@v1"]
    assert face["outputs_manifest"][0]["name"] == "predictions"
    assert "roboflow_core/byte_tracker@v3" in by_type and len(blocks) > 200


async def test_people_builtin_runs_on_a_photo(direct_backend, astronaut_jpeg):
    result = await direct_backend.run_single(astronaut_jpeg, model_id="builtin/people")
    assert set(result.counts()) <= {"person"} and result.frame is not None


def test_make_backend_picks_by_setting(base_env):
    from bot.backends import make_backend
    from bot.backends.http.backend import HttpBackend
    from bot.config import load_settings

    assert isinstance(make_backend(load_settings(base_env)), DirectBackend)
    http = make_backend(load_settings({**base_env, "VISION_AGENT_BACKEND": "http", "INFERENCE_SERVER_URL": "http://127.0.0.1:9"}))
    assert isinstance(http, HttpBackend) and http.url == "http://127.0.0.1:9"


def test_server_refuses_a_taken_port(capsys):
    import socket

    from bot.backends.http.server import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert main(port=s.getsockname()[1]) == 1
    assert "in use" in capsys.readouterr().err


async def test_saved_workflow_needs_a_key_then_the_network(settings, base_env, astronaut_jpeg, monkeypatch, direct_backend):
    with pytest.raises(BackendError, match="set ROBOFLOW_API_KEY"):
        await DirectBackend(settings).run_single(astronaut_jpeg, workspace_name="acme", workflow_id="count-cars")
    monkeypatch.setattr("bot.backends.direct.engine._api_base_url", lambda: f"https://127.0.0.1:{free_port()}")
    from bot.config import load_settings

    keyed = DirectBackend(load_settings({**base_env, "ROBOFLOW_API_KEY": "rf-test-key"}))
    start = time.monotonic()
    with pytest.raises(BackendError, match="could not reach Roboflow to load workflow acme/count-cars"):
        await keyed.start_pipeline("saved-1", "cars", "/nonexistent.mp4", WorkflowRef(workspace_name="acme", workflow_id="count-cars"))
    assert time.monotonic() - start < 20  # fast: no minute of retries against an unreachable host

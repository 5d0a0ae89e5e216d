"""The block policy on both real backends: the hostile tester's specs are refused and nothing leaves; an
operator-enabled block runs; inference's own environment and disk gates hold even behind the policy."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import cv2
import numpy as np
import pytest

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.direct.backend import DirectBackend
from bot.backends.http.backend import HttpBackend
from bot.backends.workflows import detection_workflow
from bot.config import load_settings
from tests.fixtures.attacks import CANARY, WEBHOOK, file_sink_spec, secrets_spec, webhook_spec
from tests.fixtures.inference import REPO

pytestmark = pytest.mark.slow


def frame(jpeg: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


# --- direct (in-process engine) ----------------------------------------------------------------------------------

async def test_secret_store_is_refused_naming_it_and_nothing_of_the_secret_comes_back(direct_backend, astronaut_jpeg,
                                                                                       monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", CANARY)
    with pytest.raises(BackendError) as err:
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=secrets_spec())
    assert "roboflow_core/environment_secrets_store@v1" in str(err.value) and "'secrets'" in str(err.value)
    assert "allowed_extra_blocks" in str(err.value) and CANARY not in str(err.value)
    problems = await direct_backend.validate_workflow(secrets_spec())
    assert len(problems) == 1 and "environment_secrets_store" in problems[0]


async def test_webhook_is_refused_for_images_and_pipelines_and_no_request_arrives(direct_backend, astronaut_jpeg,
                                                                                   face_video, listener):
    with pytest.raises(BackendError, match=WEBHOOK):
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=webhook_spec(listener.url))
    with pytest.raises(BackendError, match=WEBHOOK):
        await direct_backend.start_pipeline("hook", "door", str(face_video), WorkflowRef(workflow_spec=webhook_spec(listener.url)))
    await asyncio.sleep(1.0)  # the tester saw 10 requests in 2 s: give a sneaked-through pipeline time to send
    assert listener.bodies == []
    assert "hook" not in [h.pipeline_id for h in await direct_backend.list_pipelines()]


async def test_operator_enabled_webhook_runs_and_reaches_the_listener(base_env, astronaut_jpeg, listener):
    settings = load_settings(base_env, inference={"allowed_extra_blocks": [WEBHOOK]})
    backend = DirectBackend(settings)
    try:
        await backend.run_single(astronaut_jpeg, workflow_spec=webhook_spec(listener.url))
    finally:
        await backend.close()
    assert [json.loads(b) for b in listener.bodies] == [{"faces": 1}]  # the same spec, sent: the refusal above is real


async def test_local_file_sink_is_refused_and_nothing_is_written(direct_backend, astronaut_jpeg, face_video, tmp_path):
    target = tmp_path / "outside"
    target.mkdir()
    with pytest.raises(BackendError, match="local_file_sink"):
        await direct_backend.run_single(astronaut_jpeg, workflow_spec=file_sink_spec(target))
    with pytest.raises(BackendError, match="local_file_sink"):
        await direct_backend.start_pipeline("dump", "door", str(face_video), WorkflowRef(workflow_spec=file_sink_spec(target)))
    assert list(target.iterdir()) == []


async def test_inference_gates_hold_even_for_a_spec_that_skipped_the_policy(direct_backend, astronaut_jpeg, tmp_path,
                                                                            monkeypatch):
    """Defence in depth: compiled and run straight on the engine, inference itself refuses env and disk access."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", CANARY)
    target = tmp_path / "outside"
    target.mkdir()
    rt = await asyncio.to_thread(direct_backend.runtime)
    for spec in (secrets_spec(), file_sink_spec(target)):
        engine = await asyncio.to_thread(rt.compile, spec)
        with pytest.raises(Exception) as err:  # noqa: B017 - inference's own StepExecutionError
            await asyncio.to_thread(engine.run, runtime_parameters={"image": frame(astronaut_jpeg)})
        assert "forbidden" in str(err.value) or "disabled" in str(err.value) or "not allowed" in str(err.value)
        assert CANARY not in str(err.value)
    assert list(target.iterdir()) == []


# --- http (inference server) -------------------------------------------------------------------------------------

@pytest.fixture
async def http_backend(inference_server, base_env):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server}))
    yield backend
    await backend.close()


async def pipelines_reading(backend: HttpBackend, video: Path) -> list[str]:
    """Ids of the server's pipelines that read `video`. The server is shared with other test workers, whose pipelines
    come and go while this test runs, so a pipeline is ours only if it reads the test's own copy of the footage."""
    ours = []
    for server_id in await backend.server_pipelines():
        status, body = await asyncio.to_thread(backend._request, "GET", f"/inference_pipelines/{server_id}/status")
        if status == 200 and str(video) in json.dumps(body):
            ours.append(server_id)
    return ours


async def test_http_backend_refuses_before_anything_reaches_the_server(http_backend, astronaut_jpeg, face_video,
                                                                        listener, tmp_path):
    target = tmp_path / "outside"
    target.mkdir()
    video = tmp_path / "door.mp4"  # a path no other test reads
    video.write_bytes(face_video.read_bytes())
    with pytest.raises(BackendError, match="environment_secrets_store"):
        await http_backend.run_single(astronaut_jpeg, workflow_spec=secrets_spec())
    with pytest.raises(BackendError, match=WEBHOOK):
        await http_backend.run_single(astronaut_jpeg, workflow_spec=webhook_spec(listener.url))
    with pytest.raises(BackendError, match=WEBHOOK):
        await http_backend.start_pipeline("hook", "door", str(video), WorkflowRef(workflow_spec=webhook_spec(listener.url)))
    with pytest.raises(BackendError, match="local_file_sink"):
        await http_backend.start_pipeline("dump", "door", str(video), WorkflowRef(workflow_spec=file_sink_spec(target)))
    assert any("webhook_sink" in p for p in await http_backend.validate_workflow(webhook_spec(listener.url)))
    await asyncio.sleep(1.0)
    assert listener.bodies == [] and list(target.iterdir()) == []
    assert await pipelines_reading(http_backend, video) == []
    await http_backend.start_pipeline("faces", "door", str(video), WorkflowRef(model_id="builtin/faces"), max_fps=5)
    assert await pipelines_reading(http_backend, video) == [http_backend.server_id("faces")]  # the probe sees one


def save_local_workflow(spec: dict) -> tuple[str, Path]:
    """A saved workflow in inference's local store (workspace "local"): loadable offline, like a Roboflow one."""
    from inference.core.env import MODEL_CACHE_DIR

    workflow_id = f"policy-{uuid.uuid4().hex[:10]}"
    path = Path(MODEL_CACHE_DIR) / "workflow" / "local" / f"{hashlib.sha256(workflow_id.encode()).hexdigest()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"config": json.dumps({"specification": spec})}))
    return workflow_id, path


async def test_http_saved_workflow_is_fetched_and_checked_like_an_inline_one(inference_server, base_env,
                                                                              astronaut_jpeg, listener):
    backend = HttpBackend(load_settings({**base_env, "INFERENCE_SERVER_URL": inference_server,
                                         "ROBOFLOW_API_KEY": "test-key"}))
    hook_id, hook_path = save_local_workflow(webhook_spec(listener.url))
    faces_id, faces_path = save_local_workflow(detection_workflow("builtin/faces", track=False))
    try:
        with pytest.raises(BackendError, match=WEBHOOK):
            await backend.run_single(astronaut_jpeg, workspace_name="local", workflow_id=hook_id)
        result = await backend.run_single(astronaut_jpeg, workspace_name="local", workflow_id=faces_id)
        assert result.counts() == {"face": 1}  # a saved workflow the policy allows still runs
    finally:
        hook_path.unlink()
        faces_path.unlink()
        await backend.close()
    await asyncio.sleep(0.5)
    assert listener.bodies == []


async def test_server_itself_refuses_environment_access_to_a_client_that_skips_the_bot(http_backend, astronaut_jpeg):
    """Any local process can post to the server: its environment gate is off whatever the client sends."""
    import base64

    body = {"specification": secrets_spec(), "api_key": None,
            "inputs": {"image": {"type": "base64", "value": base64.b64encode(astronaut_jpeg).decode()}}}
    status, reply = await asyncio.to_thread(http_backend._request, "POST", "/workflows/run", body)
    assert status >= 400 and "environment variables is forbidden" in json.dumps(reply)


def test_server_entry_drops_the_bot_credentials_and_keeps_the_gates_off(tmp_path):
    """`vision-agent inference-server` started from a shell that has the bot's keys (and an inherited ALLOW_...=True)."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(SLACK_BOT_TOKEN=CANARY, SLACK_APP_TOKEN="xapp-canary", ANTHROPIC_API_KEY="sk-ant-canary",
               ALLOW_WORKFLOW_BLOCKS_ACCESSING_ENVIRONMENTAL_VARIABLES="True", VISION_AGENT_SERVER_DIR=str(tmp_path))
    code = (
        "import json, os, subprocess, sys\n"
        "from bot.backends.http.server import prepare_environment\n"
        "prepare_environment()\n"
        "import inference.core.env as e\n"
        "child = subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.environ))'], capture_output=True, "
        "text=True).stdout\n"
        "print(json.dumps({'env': sorted(os.environ), 'child': child, 'flags': [e.ALLOW_WORKFLOW_BLOCKS_ACCESSING_"
        "ENVIRONMENTAL_VARIABLES, e.ALLOW_WORKFLOW_BLOCKS_ACCESSING_LOCAL_STORAGE, "
        "e.ALLOW_CUSTOM_PYTHON_EXECUTION_IN_WORKFLOWS]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY"):
        assert name not in seen["env"] and name not in seen["child"]
    assert "WORKFLOWS_PLUGINS" in seen["env"] and seen["flags"] == [False, False, False]


async def test_server_reads_no_image_from_its_disk_or_local_network(http_backend, astronaut_jpeg, tmp_path, listener):
    """A spec may declare a second image input and point it, through parameters, at the server's disk or LAN."""
    (tmp_path / "private.jpg").write_bytes(astronaut_jpeg)
    spec = detection_workflow("builtin/faces", track=False, annotate=False)
    spec["inputs"].append({"type": "WorkflowImage", "name": "other"})
    spec["steps"][0]["images"] = "$inputs.other"
    for where in ({"type": "file", "value": str(tmp_path / "private.jpg")}, {"type": "url", "value": listener.url}):
        with pytest.raises(BackendError, match="other"):
            await http_backend.run_single(astronaut_jpeg, workflow_spec=spec, parameters={"other": where})
    assert listener.bodies == []

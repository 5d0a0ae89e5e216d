"""What a camera of OpenCV detectors costs the process: which heavy packages running one loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pydantic import SecretStr

from bot.backends.environment import foundation_models
from bot.config import InferenceConfig
from tests.fakes.waits import patience
from tests.fixtures.inference import REPO

HEAVY = ("transformers", "peft", "timm", "accelerate")
STREET = REPO / "tests" / "fixtures" / "data" / "crossing.mp4"  # real footage: vtest.avi's street, 5 fps

RUN_ONE_CAMERA = """
import asyncio, json, sys, tempfile
from bot.backends.base import WorkflowRef
from bot.backends.direct.backend import DirectBackend
from bot.config import load_settings

async def main():
    with tempfile.TemporaryDirectory() as tmp:
        backend = DirectBackend(load_settings({"VISION_AGENT_WORKSPACE": tmp, "VISION_AGENT_HEARTBEAT_MINUTES": "0"}))
        loop, got = asyncio.get_running_loop(), asyncio.Event()
        await backend.start_pipeline("p", "street", sys.argv[1], WorkflowRef(model_id="builtin/people"),
                                     on_result=lambda handle, result: loop.call_soon_threadsafe(got.set))
        await asyncio.wait_for(got.wait(), float(sys.argv[2]))
        await backend.close()

asyncio.run(main())
print(json.dumps({name: name in sys.modules for name in ["inference", *sys.argv[3:]]}))
"""


def _modules_after_one_camera(extra_env: dict[str, str]) -> dict[str, bool]:
    env = {k: v for k, v in os.environ.items()
           if "proxy" not in k.lower() and k != "ROBOFLOW_API_KEY" and not k.endswith("_ENABLED")}
    env.update(extra_env)
    cmd = [sys.executable, "-c", RUN_ONE_CAMERA, str(STREET), str(patience(120)), *HEAVY]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=patience(300))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_camera_of_builtin_detectors_without_a_key_never_imports_transformers():
    """The process really ran a pipeline (inference is loaded) yet holds none of the foundation models' stacks."""
    loaded = _modules_after_one_camera({})
    assert loaded["inference"], loaded
    assert not any(loaded[name] for name in HEAVY), loaded


def test_foundation_models_follow_the_operator_then_the_key():
    key = SecretStr("rf-key")
    assert foundation_models(InferenceConfig()) is False
    assert foundation_models(InferenceConfig(api_key=key)) is True
    assert foundation_models(InferenceConfig(api_key=key, foundation_models=False)) is False
    assert foundation_models(InferenceConfig(foundation_models=True)) is True

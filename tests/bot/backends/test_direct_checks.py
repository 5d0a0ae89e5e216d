"""A direct start from an inline or composed spec checks it against the block policy once and compiles it once.

Counted by wrapping our own functions: every binding of `check_spec` (the policy, refuse_unsafe's, the direct
backend's) and `InferenceRuntime.compile`. inference's own compile inside InferencePipeline.init_with_workflow is
not ours and is not counted; nor is the compile of a pipeline's drawing-only workflow (bot/backends/deferred.py), a
spec of its own (`drawings`).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

import bot.backends.direct.backend as direct_backend_module
import bot.backends.policy as policy
import bot.backends.policy.check as policy_check
import bot.backends.shared as shared
from bot.agent.tools import ToolContext
from bot.backends import deferred
from bot.backends.base import BackendError, WorkflowRef
from bot.backends.direct.engine import InferenceRuntime
from bot.backends.provider import BackendProvider
from bot.backends.workflows import detection_workflow
from bot.pipelines.manager import PipelineManager
from bot.pipelines.request import StartRequest
from bot.services import Services
from tests.fixtures.attacks import WEBHOOK, webhook_spec
from tests.fixtures.inference import make_video
from tools import build_registry

pytestmark = pytest.mark.slow


class Counts:
    def __init__(self) -> None:
        self.checks = 0
        self.compiles = 0
        self.drawings = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counts:
    seen = Counts()
    real_check, real_compile = policy_check.check_spec, InferenceRuntime.compile

    def check_spec(spec: Any, inference: Any, *args: Any) -> list[str]:
        seen.checks += 1
        return real_check(spec, inference, *args)

    def compile_(self: InferenceRuntime, spec: dict[str, Any]) -> Any:
        if spec.get("steps") and all(deferred.is_drawing(s) for s in spec["steps"]):
            seen.drawings += 1
        else:
            seen.compiles += 1
        return real_compile(self, spec)

    for module in (policy_check, policy, shared, direct_backend_module):
        monkeypatch.setattr(module, "check_spec", check_spec)
    monkeypatch.setattr(InferenceRuntime, "compile", compile_)
    return seen


@pytest.fixture
def manager(settings, workspace_dir: Path, direct_backend) -> PipelineManager:
    return PipelineManager(lambda: direct_backend, workspace_dir / "active_state.json", settings)


def hook(url: str) -> dict[str, Any]:
    """The tester's webhook step (POSTs to url on every frame)."""
    return next(step for step in webhook_spec(url)["steps"] if step["type"] == WEBHOOK)


def fresh_spec(confidence: float, **kw: Any) -> dict[str, Any]:
    """A spec no other test compiled (the direct backend is shared by the session and caches engines by spec)."""
    return detection_workflow("builtin/faces", confidence=confidence, **kw)


async def test_manager_start_from_an_inline_spec_checks_once_and_compiles_once(manager, counts, face_video):
    handle = await manager.start(StartRequest(str(face_video), "door", workflow_spec=fresh_spec(0.4311)))
    try:
        assert handle.status in ("running", "finished")
        assert (counts.checks, counts.compiles, counts.drawings) == (1, 1, 1)  # drawings: its drawing steps
    finally:
        await manager.stop("door")


async def test_tool_start_with_a_line_composes_a_spec_checked_once_and_compiled_once(counts, settings, manager,
                                                                                    direct_backend, workspace_dir):
    make_video(workspace_dir / "door.mp4", frames=20)
    ctx = ToolContext(settings=settings, services=Services(backend=BackendProvider.of(direct_backend),
                                                           pipelines=manager))
    res = await build_registry().execute(
        "start_pipeline", {"video_reference": "door.mp4", "pipeline_name": "door", "model_id": "builtin/faces",
                           "line": "317,0,319,480"}, ctx)
    try:
        assert not res.is_error, res.text
        assert (counts.checks, counts.compiles, counts.drawings) == (1, 1, 1)  # drawings: its drawing steps
    finally:
        await manager.stop("door")


async def test_backend_start_without_the_manager_still_checks_and_compiles_once(direct_backend, counts, face_video):
    await direct_backend.start_pipeline("checks-1", "door", str(face_video), WorkflowRef(workflow_spec=fresh_spec(0.4312)))
    try:
        assert (counts.checks, counts.compiles, counts.drawings) == (1, 1, 1)  # drawings: its drawing steps
    finally:
        await direct_backend.stop_pipeline("checks-1")


async def test_a_refused_spec_is_checked_once_and_never_compiled_or_started(manager, counts, face_video, listener):
    spec = fresh_spec(0.4313)
    spec["steps"].append(hook(listener.url))
    with pytest.raises(BackendError, match=WEBHOOK):
        await manager.start(StartRequest(str(face_video), "hook", workflow_spec=spec))
    assert (counts.checks, counts.compiles) == (1, 0)
    assert manager.snapshot() == []


async def test_a_validated_spec_changed_afterwards_is_checked_again_and_refused(direct_backend, counts, face_video,
                                                                                listener):
    spec = fresh_spec(0.4314)
    assert await direct_backend.validate_workflow(spec) == []
    assert (counts.checks, counts.compiles) == (1, 1)
    spec["steps"].append(hook(listener.url))  # the same dict, changed
    with pytest.raises(BackendError, match=WEBHOOK):
        await direct_backend.start_pipeline("changed", "door", str(face_video), WorkflowRef(workflow_spec=spec))
    assert counts.checks == 2 and counts.compiles == 1
    assert "changed" not in [h.pipeline_id for h in await direct_backend.list_pipelines()]
    await asyncio.sleep(0.5)
    assert listener.bodies == []


async def test_the_remembered_spec_is_the_whole_spec_not_its_hash(direct_backend, counts):
    spec = fresh_spec(0.4315)
    assert await direct_backend.validate_workflow(spec) == []
    assert direct_backend._vetted(copy.deepcopy(spec))
    twin = copy.deepcopy(spec)
    twin["steps"][0]["confidence"] = True  # not equal to 0.4315, whatever the hash says
    assert not direct_backend._vetted(twin)
    assert not direct_backend._vetted("not a spec")

"""The in-process inference runtime (model manager, engine compiler) and spec resolution for DirectBackend."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from bot.backends.base import BackendError, WorkflowRef
from bot.backends.direct.frames import return_freed_frames
from bot.backends.environment import engine_flags
from bot.backends.errors import OFFLINE_HINT
from bot.backends.shared import fetch_saved_workflow, inline_spec, refuse_unsafe
from bot.backends.workflows import describe_spec, spec_hash
from bot.config import Settings

PROBE_TIMEOUT = 3.0  # seconds to decide Roboflow is unreachable
PROBE_TTL = 30.0  # seconds a probe answer is reused


@dataclass(frozen=True)
class SpecSource:
    """A resolved, safety-checked workflow ready to compile."""

    spec: dict[str, Any]
    key: str
    what: str  # how errors name it: "model builtin/faces", "workflow ws/id", "the workflow"
    description: str
    image_input: str = "image"


class InferenceRuntime:
    """Model manager + engine compiler, built once per backend (importing inference takes seconds)."""

    def __init__(self, settings: Settings) -> None:
        from inference.core.managers.base import ModelManager
        from inference.core.managers.decorators.fixed_size_cache import WithFixedSizeCache
        from inference.core.registries.roboflow import RoboflowModelRegistry
        from inference.models.utils import ROBOFLOW_MODEL_TYPES

        self.settings = settings
        _require_engine_flags(settings)
        return_freed_frames()
        key = settings.inference.api_key
        self.api_key = key.get_secret_value() if key else None
        registry = RoboflowModelRegistry(ROBOFLOW_MODEL_TYPES)
        self.model_manager = WithFixedSizeCache(ModelManager(model_registry=registry), max_size=8)
        self._probe: tuple[float, bool] | None = None
        self._probe_lock = threading.Lock()

    def init_parameters(self, spec: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """Engine init parameters bound to our model manager, the way InferencePipeline binds them."""
        from inference.core.interfaces.legacy_stream.inference_pipeline import prepare_workflow_for_pipeline
        from inference.core.workflows.execution_engine.profiling.core import NullWorkflowsProfiler

        prepared = prepare_workflow_for_pipeline(
            workflow_specification=spec,
            workspace_name=None,
            workflow_id=None,
            workflow_version_id=None,
            api_key=self.api_key,
            use_workflow_definition_cache=True,
            workflow_init_parameters=None,
            model_manager=self.model_manager,
            profiler=NullWorkflowsProfiler.init(),
        )
        return prepared.workflow_init_parameters, prepared.step_error_handler

    def compile(self, spec: dict[str, Any]) -> Any:
        """A compiled ExecutionEngine for spec (raises the engine's compile errors)."""
        from inference.core.workflows.execution_engine.core import ExecutionEngine

        params, handler = self.init_parameters(spec)
        return ExecutionEngine.init(
            workflow_definition=spec,
            init_parameters=params,
            prevent_local_images_loading=True,
            step_error_handler=handler,
        )

    def describe_blocks(self) -> list[dict[str, Any]]:
        from inference.core.workflows.execution_engine.introspection.blocks_loader import describe_available_blocks

        described = describe_available_blocks(dynamic_blocks=[])
        return [b.model_dump(mode="json", by_alias=True) for b in described.blocks]

    def fetch_workflow(self, workspace_name: str, workflow_id: str) -> dict[str, Any]:
        what = f"workflow {workspace_name}/{workflow_id}"
        if not self.api_key:
            raise BackendError(f"loading {what} needs a Roboflow API key: set ROBOFLOW_API_KEY")
        self.require_roboflow(what)
        return fetch_saved_workflow(self.settings, workspace_name, workflow_id)

    def require_roboflow(self, what: str) -> None:
        """Fail fast (≤ PROBE_TIMEOUT) when the Roboflow API cannot be reached, instead of hanging on a load."""
        with self._probe_lock:
            now = time.monotonic()
            if self._probe is None or now - self._probe[0] > PROBE_TTL:
                self._probe = (now, _reachable(_api_base_url()))
            ok = self._probe[1]
        if not ok:
            raise BackendError(f"could not reach Roboflow to load {what}: {OFFLINE_HINT}")


def _require_engine_flags(settings: Settings) -> None:
    """Refuse to run blocks if inference read its env before ensure_inference_env set the safe flags."""
    import inference.core.env as env  # seconds to import: only once the runtime is being built

    wrong = [k for k, want in engine_flags(settings.inference).items() if bool(getattr(env, k)) != want]
    if wrong:
        raise BackendError(
            f"inference was loaded before its safe settings were applied ({', '.join(wrong)}): restart vision-agent"
        )


def _api_base_url() -> str:
    from inference.core.env import API_BASE_URL

    return API_BASE_URL


def _reachable(url: str) -> bool:
    if any(os.environ.get(v) for v in ("https_proxy", "HTTPS_PROXY")):
        return True  # requests goes through the proxy; a direct probe would say nothing
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=PROBE_TIMEOUT):
            return True
    except OSError:
        return False


def _image_input(spec: dict[str, Any]) -> str:
    for item in spec.get("inputs") or []:
        if isinstance(item, dict) and item.get("type") in ("WorkflowImage", "InferenceImage"):
            return str(item.get("name", "image"))
    return "image"


def _model_ids(spec: dict[str, Any]) -> list[str]:
    ids = []
    for step in spec.get("steps") or []:
        mid = step.get("model_id") if isinstance(step, dict) else None
        if isinstance(mid, str) and not mid.startswith("$"):
            ids.append(mid)
    return ids


def resolve_spec(
    rt: InferenceRuntime, settings: Settings, ref: WorkflowRef, video: bool = False,
    vetted: Callable[[dict[str, Any]], bool] = lambda spec: False,
) -> SpecSource:
    """Turn the three ways of naming work (spec, saved workflow, model id) into a checked SpecSource.

    The direct backend's block-policy check of every spec it runs (inline, composed or a model's); `vetted(spec)`
    is the backend's word that this very spec already passed it there (validate_workflow), so it is not run twice.
    """
    spec, what = inline_spec(ref, video, settings.inference.motion_gate)
    if spec is None:
        if not (ref.workspace_name and ref.workflow_id):
            raise BackendError("give model_id, workflow_spec, or workspace_name + workflow_id.")
        spec = rt.fetch_workflow(ref.workspace_name, ref.workflow_id)  # policy-checked there
    elif not vetted(spec):
        refuse_unsafe(spec, settings)
    remote_models = _model_ids(spec)
    if remote_models:
        rt.require_roboflow(what if ref.model_id else f"model {remote_models[0]}")
    return SpecSource(
        spec=spec, key=spec_hash(spec), what=what, description=describe_spec(spec), image_input=_image_input(spec)
    )

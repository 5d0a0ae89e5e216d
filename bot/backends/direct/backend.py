"""DirectBackend: the in-process workflow engine for single images, InferencePipeline threads for video."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from bot.backends.base import BackendError, InferenceResult, PipelineHandle, ResultListener, WorkflowRef
from bot.backends.convert import from_workflow_output
from bot.backends.counting import with_counting_defaults
from bot.backends.direct.engine import InferenceRuntime, SpecSource, resolve_spec
from bot.backends.environment import ensure_inference_env
from bot.backends.errors import translate, workflow_problems
from bot.backends.policy import check_spec
from bot.backends.shared import BackendBase
from bot.backends.workflows import spec_hash
from bot.config import Settings

MAX_CACHED_ENGINES = 16


@dataclass(frozen=True)
class _Engine:
    """A compiled spec: only ever made for a spec that passed the block policy in this backend (see _vetted)."""

    spec: dict[str, Any]  # a private copy of the spec it was compiled from, compared whole on every look-up
    engine: Any
    lock: threading.Lock


class DirectBackend(BackendBase):
    """InferenceBackend running everything inside this process (offline-capable with the builtin models)."""

    name = "direct"
    scales_frames = True  # bot/backends/direct/capture.py

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        ensure_inference_env(settings.inference)
        self._runtime: InferenceRuntime | None = None
        self._runtime_lock = threading.Lock()
        self._loading = False
        self._first_compile = True
        # Compiled engines by spec_hash, most recently used last. An entry is also this backend's record that the spec
        # passed its block policy and compiled: validate_workflow and the start that follows check and compile once.
        self._engines: OrderedDict[str, _Engine] = OrderedDict()
        self._engines_lock = threading.Lock()

    # --- shared plumbing -----------------------------------------------------------------------------------------

    @property
    def loading(self) -> bool:
        """True while inference itself loads here: its import and the first engine's compile (10-30 s, once per
        process). A terminal says so while it waits (BackendProvider.loading)."""
        return self._loading

    def runtime(self) -> InferenceRuntime:
        """The lazily built in-process runtime (imports inference: seconds, so call it from a thread)."""
        with self._runtime_lock:
            if self._runtime is None:
                self._loading = True
                try:
                    self._runtime = InferenceRuntime(self._settings)
                finally:
                    self._loading = False
            return self._runtime

    def _engine(self, spec: dict[str, Any]) -> _Engine:
        """spec's compiled engine, compiled now unless cached (raises the compiler's errors).

        Only for a spec that passed the block policy here: resolve_spec (or fetch_saved_workflow) or validate_workflow
        checked it, since a cached engine is what _vetted takes as proof of that check.
        """
        key = spec_hash(spec)
        with self._engines_lock:
            cached = self._engines.pop(key, None)
            if cached is None or cached.spec != spec:  # the whole spec, not only its hash, must be the one compiled
                runtime, first = self.runtime(), self._first_compile
                self._loading = first  # the first compile loads the workflow blocks: part of the load
                try:
                    cached = _Engine(copy.deepcopy(spec), runtime.compile(spec), threading.Lock())
                finally:
                    if first:
                        self._first_compile = self._loading = False
            self._engines[key] = cached  # most recently used last
            while len(self._engines) > MAX_CACHED_ENGINES:
                self._engines.popitem(last=False)
            return cached

    def _vetted(self, spec: Any) -> bool:
        """True when this very spec (equal in every value) already passed the block policy here and compiled.

        The policy itself runs in one place per spec: resolve_spec (every start and image, whoever calls) or
        validate_workflow (the manager's check before a start); an engine evicted from the cache is checked again.
        """
        if not isinstance(spec, dict):
            return False
        with self._engines_lock:
            cached = self._engines.get(spec_hash(spec))
            return cached is not None and cached.spec == spec

    async def _source(self, ref: WorkflowRef, video: bool) -> SpecSource:
        rt = await asyncio.to_thread(self.runtime)
        return await asyncio.to_thread(resolve_spec, rt, self._settings, ref, video, self._vetted)

    # --- single images -------------------------------------------------------------------------------------------

    async def _run_frame(self, frame: Any, ref: WorkflowRef, parameters: dict | None) -> InferenceResult:
        source = await self._source(ref, video=False)
        return await asyncio.to_thread(self._run_single_sync, source, frame, parameters or {})

    def _run_single_sync(self, source: SpecSource, frame: Any, parameters: dict) -> InferenceResult:
        try:
            compiled = self._engine(source.spec)
            with compiled.lock:  # stateful blocks (trackers, counters) are not safe to run concurrently
                outputs = compiled.engine.run(runtime_parameters={**parameters, source.image_input: frame})
        except Exception as exc:  # noqa: BLE001 - converted into a one-line BackendError
            raise translate(exc, source.what) from exc
        if not outputs:
            return InferenceResult(image_size=(frame.shape[1], frame.shape[0]))
        return from_workflow_output(
            outputs[0], source_image=frame, max_dimension=self._settings.monitoring.result_image_max_dimension
        )

    # --- blocks and validation -----------------------------------------------------------------------------------

    async def describe_blocks(self) -> list[dict[str, Any]]:
        rt = await asyncio.to_thread(self.runtime)
        return await asyncio.to_thread(rt.describe_blocks)

    async def validate_workflow(self, spec: dict) -> list[str]:
        """The block policy, then the compiler, on the spec as a start would run it (with the counting defaults).

        A spec that passes is remembered with its engine, so starting it next is neither checked nor compiled again.
        """
        spec = with_counting_defaults(spec)
        if self._vetted(spec):
            return []
        return check_spec(spec, self._settings.inference, self._settings.media.max_pixels) or await self._compile_problems(spec)

    async def _compile_problems(self, spec: dict) -> list[str]:
        """Why spec does not compile (empty: it did, and its engine is cached). Only for a policy-checked spec."""
        await asyncio.to_thread(self.runtime)
        try:
            await asyncio.to_thread(self._engine, spec)
        except Exception as exc:  # noqa: BLE001 - compile errors are the answer
            return workflow_problems(exc)
        return []

    # --- pipelines -----------------------------------------------------------------------------------------------

    async def _start(
        self, pipeline_id: str, name: str, video_reference: str, ref: WorkflowRef,
        max_fps: float | None, parameters: dict | None, on_result: ResultListener | None,
    ) -> PipelineHandle:
        from bot.backends.direct.pipeline import DirectPipeline

        source = await self._source(ref, video=True)  # policy-checked there, unless validate_workflow just did
        problems = await self._compile_problems(source.spec)  # a cached engine when validate_workflow compiled it
        if problems:  # compile once here so a bad spec is an error the model can fix, not a dead pipeline
            raise BackendError("the workflow is invalid: " + "; ".join(problems))
        pipe = DirectPipeline(
            pipeline_id=pipeline_id,
            name=name,
            video_reference=video_reference,
            source=source,
            runtime=self.runtime(),
            settings=self._settings,
            max_fps=max_fps,
            parameters=parameters or {},
            on_result=on_result,
        )
        self._pipelines[pipeline_id] = pipe
        await asyncio.to_thread(pipe.start)
        return pipe.handle()

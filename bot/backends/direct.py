"""DirectBackend: the in-process workflow engine for single images, InferencePipeline threads for video."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import Any

from bot.backends import ensure_inference_env
from bot.backends.base import BackendError, InferenceResult, PipelineHandle, ResultListener
from bot.backends.convert import decode_image, from_workflow_output
from bot.backends.errors import translate, workflow_problems
from bot.backends.runtime import Runtime, SpecSource, resolve_spec
from bot.config import Settings

MAX_CACHED_ENGINES = 16


class DirectBackend:
    """InferenceBackend running everything inside this process (offline-capable with the builtin models)."""

    name = "direct"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        ensure_inference_env(settings.inference.allow_custom_python)
        self._runtime: Runtime | None = None
        self._runtime_lock = threading.Lock()
        self._engines: OrderedDict[str, tuple[Any, threading.Lock]] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._pipelines: dict[str, Any] = {}  # pipeline_id -> DirectPipeline

    # --- shared plumbing -----------------------------------------------------------------------------------------

    def runtime(self) -> Runtime:
        """The lazily built in-process runtime (imports inference: seconds, so call it from a thread)."""
        with self._runtime_lock:
            if self._runtime is None:
                self._runtime = Runtime(self._settings)
            return self._runtime

    def _engine(self, source: SpecSource) -> tuple[Any, threading.Lock]:
        with self._engines_lock:
            cached = self._engines.pop(source.key, None)
            if cached is None:
                cached = (self.runtime().compile(source.spec), threading.Lock())
            self._engines[source.key] = cached  # most recently used last
            while len(self._engines) > MAX_CACHED_ENGINES:
                self._engines.popitem(last=False)
            return cached

    async def _source(self, **kwargs: Any) -> SpecSource:
        rt = await asyncio.to_thread(self.runtime)
        return await asyncio.to_thread(resolve_spec, rt, self._settings, **kwargs)

    # --- single images -------------------------------------------------------------------------------------------

    async def run_single(
        self,
        image: bytes,
        model_id: str | None = None,
        workflow_spec: dict | None = None,
        workspace_name: str | None = None,
        workflow_id: str | None = None,
        parameters: dict | None = None,
        confidence: float | None = None,
    ) -> InferenceResult:
        frame = decode_image(image)
        if frame is None:
            raise BackendError("the image could not be decoded: send a JPEG or PNG file")
        source = await self._source(
            model_id=model_id,
            workflow_spec=workflow_spec,
            workspace_name=workspace_name,
            workflow_id=workflow_id,
            confidence=confidence,
            video=False,
        )
        return await asyncio.to_thread(self._run_single_sync, source, frame, parameters or {})

    def _run_single_sync(self, source: SpecSource, frame: Any, parameters: dict) -> InferenceResult:
        try:
            engine, lock = self._engine(source)
            with lock:  # stateful blocks (trackers, counters) are not safe to run concurrently
                outputs = engine.run(runtime_parameters={**parameters, source.image_input: frame})
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
        from bot.backends.workflows import check_spec

        problems = check_spec(spec, self._settings.inference.allow_custom_python)
        if problems:
            return problems
        rt = await asyncio.to_thread(self.runtime)
        try:
            await asyncio.to_thread(rt.compile, spec)
        except Exception as exc:  # noqa: BLE001 - compile errors are the answer
            return workflow_problems(exc)
        return []

    # --- pipelines -----------------------------------------------------------------------------------------------

    async def start_pipeline(
        self,
        pipeline_id: str,
        name: str,
        video_reference: str,
        workflow_spec: dict | None = None,
        workspace_name: str | None = None,
        workflow_id: str | None = None,
        max_fps: float | None = None,
        parameters: dict | None = None,
        on_result: ResultListener | None = None,
        model_id: str | None = None,
        confidence: float | None = None,
    ) -> PipelineHandle:
        from bot.backends.direct_pipeline import DirectPipeline

        if pipeline_id in self._pipelines and self._pipelines[pipeline_id].is_alive():
            raise BackendError(f"pipeline {pipeline_id} is already running: stop it first or pick another id")
        source = await self._source(
            model_id=model_id,
            workflow_spec=workflow_spec,
            workspace_name=workspace_name,
            workflow_id=workflow_id,
            confidence=confidence,
            video=True,
        )
        problems = await self.validate_workflow(source.spec)
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

    def _pipe(self, pipeline_id: str) -> Any:
        pipe = self._pipelines.get(pipeline_id)
        if pipe is None:
            raise BackendError(f"no pipeline {pipeline_id!r}: list pipelines to see the ids")
        return pipe

    async def consume_results(self, pipeline_id: str, max_results: int = 5) -> list[InferenceResult]:
        return self._pipe(pipeline_id).take(max_results)

    def latest_result(self, pipeline_id: str) -> InferenceResult | None:
        pipe = self._pipelines.get(pipeline_id)
        return pipe.latest if pipe is not None else None

    async def stop_pipeline(self, pipeline_id: str) -> PipelineHandle:
        pipe = self._pipe(pipeline_id)
        await asyncio.to_thread(pipe.terminate)
        return pipe.handle()

    async def pause_pipeline(self, pipeline_id: str) -> PipelineHandle:
        pipe = self._pipe(pipeline_id)
        await asyncio.to_thread(pipe.pause)
        return pipe.handle()

    async def resume_pipeline(self, pipeline_id: str) -> PipelineHandle:
        pipe = self._pipe(pipeline_id)
        await asyncio.to_thread(pipe.resume)
        return pipe.handle()

    async def list_pipelines(self) -> list[PipelineHandle]:
        return [p.handle() for p in self._pipelines.values()]

    async def get_pipeline_status(self, pipeline_id: str) -> PipelineHandle:
        return self._pipe(pipeline_id).handle()

    async def close(self) -> None:
        pipes = list(self._pipelines.values())
        await asyncio.gather(*(asyncio.to_thread(p.terminate) for p in pipes))

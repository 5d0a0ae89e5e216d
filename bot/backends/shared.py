"""What both backends share: reading a WorkflowRef, the protocol's entry points, the table of pipelines."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.backends.base import BackendError, InferenceResult, PipelineHandle, ResultListener, WorkflowRef
from bot.backends.counting import with_counting_defaults
from bot.backends.environment import ensure_inference_env
from bot.backends.errors import translate
from bot.backends.imaging import decode_image
from bot.backends.policy import check_spec
from bot.backends.policy.sizes import check_sizes
from bot.backends.workflows import BUILTIN_MODELS, detection_workflow
from bot.config import Settings
from bot.media.decode import off_loop
from bot.media.frame_limit import decoded_whole
from bot.media.sniff import ImageRejected
from bot.media.sources import header_frame_size, is_live

log = logging.getLogger(__name__)


def inline_spec(ref: WorkflowRef, video: bool, motion_gate: bool = True) -> tuple[dict | None, str]:
    """(spec, how errors name it); spec is None for a saved workflow, which the runner fetches itself.
    motion_gate: `inference.motion_gate` (off: the builtin detectors run on every frame, unless a step says)."""
    if ref.workflow_spec is not None:  # a composed spec counts like line= does, unless it says otherwise
        return gated(with_counting_defaults(ref.workflow_spec), motion_gate), "the workflow"
    if ref.workspace_name and ref.workflow_id:
        return None, f"workflow {ref.workspace_name}/{ref.workflow_id}"
    if ref.model_id:
        spec = detection_workflow(ref.model_id, confidence=ref.confidence, track=video)
        return gated(spec, motion_gate), f"model {ref.model_id}"
    raise BackendError("nothing to run: give a model_id (e.g. builtin/faces), a workflow spec, or workspace + workflow id")


def gated(spec: Any, motion_gate: bool) -> Any:
    """spec as is with the gate on (the blocks' default); off, a copy whose builtin detectors say `motion_gate: false`
    where they set nothing."""
    steps = spec.get("steps") if isinstance(spec, dict) else None
    if motion_gate or not isinstance(steps, list):
        return spec
    builtin = set(BUILTIN_MODELS.values())
    return {**spec, "steps": [{**s, "motion_gate": False} if isinstance(s, dict) and s.get("type") in builtin
                              and "motion_gate" not in s else s for s in steps]}


def refuse_unsafe(spec: dict, settings: Settings, parameters: dict | None = None) -> None:
    """BackendError if the spec may not run here (a block off the allowlist, custom Python without the opt-in, an
    image sized over media.max_pixels)."""
    problems = check_spec(spec, settings.inference, settings.media.max_pixels, parameters)
    if problems:
        raise BackendError("workflow refused: " + "; ".join(problems))


def fetch_saved_workflow(settings: Settings, workspace_name: str, workflow_id: str) -> dict:
    """A saved workflow's spec (Roboflow, or inference's local cache), fetched here so it passes refuse_unsafe too."""
    what = f"workflow {workspace_name}/{workflow_id}"
    key = settings.inference.api_key
    if key is None:
        raise BackendError(f"loading {what} needs a Roboflow API key: set ROBOFLOW_API_KEY")
    ensure_inference_env(settings.inference)  # before inference's env module loads (the http backend's first use)
    from inference.core.roboflow_api import get_workflow_specification  # seconds to import: only when needed

    try:
        spec = get_workflow_specification(api_key=key.get_secret_value(), workspace_id=workspace_name,
                                          workflow_id=workflow_id)
    except Exception as exc:  # noqa: BLE001 - one line the user can act on
        raise translate(exc, what) from exc
    refuse_unsafe(spec, settings)
    return gated(with_counting_defaults(spec), settings.inference.motion_gate)


class BackendBase:
    """The InferenceBackend entry points both backends implement alike; subclasses supply _run_frame and _start.

    Pipelines live in self._pipelines (our pipeline id -> a PipelineBase with pause/resume/terminate).
    """

    name = ""
    # Its pipelines scale frames over media.max_pixels where they decode them (direct: capture.py); the others (an
    # inference server decodes) refuse such a source at start instead (_refuse_huge_frames).
    scales_frames = False

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pipelines: dict[str, Any] = {}

    async def _run_frame(self, frame: Any, ref: WorkflowRef, parameters: dict | None) -> InferenceResult:
        raise NotImplementedError

    async def _start(
        self, pipeline_id: str, name: str, video_reference: str, ref: WorkflowRef,
        max_fps: float | None, parameters: dict | None, on_result: ResultListener | None,
    ) -> PipelineHandle:
        raise NotImplementedError

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
        ref = WorkflowRef(model_id, workflow_spec, workspace_name, workflow_id, confidence)
        self._refuse_sized_parameters(ref, parameters)
        try:  # the header is checked against media.max_pixels before OpenCV allocates a pixel; off the loop, in time
            frame = await off_loop(decode_image, image, self._settings.media.max_pixels,
                                   timeout=self._settings.media.decode_timeout_seconds)
        except ImageRejected as exc:  # too many pixels or scans, or too slow
            raise BackendError(str(exc)) from None
        if frame is None:
            raise BackendError("the image could not be decoded: send a JPEG or PNG file")
        return await self._run_frame(frame, ref, parameters)

    async def start_pipeline(
        self,
        pipeline_id: str,
        name: str,
        video_reference: str,
        ref: WorkflowRef,
        max_fps: float | None = None,
        parameters: dict | None = None,
        on_result: ResultListener | None = None,
    ) -> PipelineHandle:
        if pipeline_id in self._pipelines and self._pipelines[pipeline_id].is_alive():
            raise BackendError(f"pipeline {pipeline_id} is already running: stop it first or pick another id")
        self._refuse_sized_parameters(ref, parameters)
        if not self.scales_frames:
            await self._refuse_huge_frames(video_reference)
        return await self._start(pipeline_id, name, video_reference, ref, max_fps, parameters, on_result)

    async def _refuse_huge_frames(self, video_reference: str) -> None:
        """A source whose stream declares frames over media.max_pixels, refused (one line saying what to do) before
        a server decodes every one of them whole (one 12000x12000 camera: gigabytes). Read from its header, nothing
        decoded; a webcam index (the server's own device) and a source this process cannot open are left to the
        server.

        A check at start sees only the size the stream declares then (an MJPEG camera: its first frame): a camera
        that raises its resolution later is decoded whole by the server, which opens the camera itself, so nothing
        here can bound it (docs/security.md, "Video frames"); the direct backend bounds each frame."""
        if str(video_reference).strip().isdigit():
            return
        max_pixels = self._settings.media.max_pixels
        size = await asyncio.to_thread(header_frame_size, video_reference)
        if size and (why := decoded_whole(*size, max_pixels, self.name, is_live(video_reference))):
            raise BackendError(why)

    def _refuse_sized_parameters(self, ref: WorkflowRef, parameters: dict | None) -> None:
        """The run's parameters can set a sizing input the spec's check saw only with its default."""
        if parameters and ref.workflow_spec is not None:
            problems = check_sizes(ref.workflow_spec, self._settings.media.max_pixels, parameters)
            if problems:
                raise BackendError("workflow refused: " + "; ".join(problems))

    # --- the table of pipelines ----------------------------------------------------------------------------------

    def _pipe(self, pipeline_id: str) -> Any:
        pipe = self._pipelines.get(pipeline_id)
        if pipe is None:
            raise BackendError(f"no pipeline {pipeline_id!r}: list pipelines to see the ids")
        return pipe

    async def consume_results(self, pipeline_id: str, max_results: int = 5) -> list[InferenceResult]:
        return self._pipe(pipeline_id).take(max_results)

    def latest_result(self, pipeline_id: str) -> InferenceResult | None:
        """The newest result, its frame made now: whoever asks may show it after a newer result has sealed this one."""
        pipe = self._pipelines.get(pipeline_id)
        latest = pipe.latest if pipe is not None else None
        if latest is not None:
            latest.frame  # noqa: B018 - the property draws and encodes it (once)
        return latest

    async def _act(self, pipeline_id: str, action: str) -> PipelineHandle:
        pipe = self._pipe(pipeline_id)
        await asyncio.to_thread(getattr(pipe, action))
        return pipe.handle()

    async def stop_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._act(pipeline_id, "terminate")

    async def pause_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._act(pipeline_id, "pause")

    async def resume_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._act(pipeline_id, "resume")

    async def list_pipelines(self) -> list[PipelineHandle]:
        return [p.handle() for p in self._pipelines.values()]

    async def get_pipeline_status(self, pipeline_id: str) -> PipelineHandle:
        return self._pipe(pipeline_id).handle()

    async def close(self) -> None:
        """Terminate every pipeline; safe to call again (a pipeline's terminate is idempotent), the backend stays usable."""
        pipes = list(self._pipelines.values())
        outcomes = await asyncio.gather(*(asyncio.to_thread(p.terminate) for p in pipes), return_exceptions=True)
        for pipe, outcome in zip(pipes, outcomes, strict=True):
            if isinstance(outcome, Exception):  # one stuck pipeline must not keep the others running
                log.warning("pipeline %s did not terminate cleanly: %s", pipe.pipeline_id, outcome)

"""One in-process InferencePipeline: status from its events, a bounded result buffer, pause/resume/terminate."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from bot.backends.base import LIVE, ResultListener
from bot.backends.convert import from_workflow_output
from bot.backends.deferred import Drawing, prepare, take_values
from bot.backends.direct.capture import BoundedSource
from bot.backends.direct.engine import InferenceRuntime, SpecSource
from bot.backends.direct.frames import queue_depth
from bot.backends.errors import translate
from bot.backends.orientation import Orientation, orientation_of, turn_frame
from bot.backends.pipeline_base import PipelineBase
from bot.config import Settings
from bot.media.frame_limit import SAID_SIZES, bounded_size, scaled_note
from bot.media.sources import buffer_strategies, capture_reference, file_fps, is_live

log = logging.getLogger(__name__)
STARTUP_WAIT = 10.0  # seconds start() waits to learn whether the source opened


class _SourceErrorFilter(logging.Filter):
    """Drop streamvision's full traceback for a source that cannot be opened: we report it as status `error`."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and type(exc).__name__ == "SourceConnectionError")


class _ReconnectFilter(logging.Filter):
    """Drop streamvision's two warnings per failed reconnection (every second while a camera is away, each naming
    its URL): the pipeline's status line and one health alert say the camera is away (bot/backends/faults/)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not (message.startswith("Could not re-connect") or message.startswith("Could not connect to video"))


def _quiet_source_errors() -> None:
    for name, kind in (("streamvision.stream.pipeline", _SourceErrorFilter),
                       ("streamvision.camera.utils", _ReconnectFilter)):
        target = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in target.filters):
            target.addFilter(kind())


def sampled_file(base: Any, fps: float, source_fps: float | None) -> tuple[Any, float]:
    """`fps=` on a video file, as a camera at that rate would give it: `fps` frames per second of video time
    (every k-th frame, the source's own sub-sampling), paced in real time. (InferencePipeline alone would replay
    every frame at `fps`: slow motion.) Returns the pipeline class and the rate its limiter paces at: `fps`, or the
    file's own rate when that is lower (every frame, in real time, never faster)."""
    pace = min(fps, source_fps) if source_fps else fps

    class SampledFile(base):
        @classmethod
        def _prepare_video_sources(cls, **kwargs: Any) -> Any:
            return super()._prepare_video_sources(**{**kwargs, "desired_source_fps": pace})

    return SampledFile, pace


class DirectPipeline(PipelineBase):
    """Owns one InferencePipeline's threads; every method is safe to call from any thread."""

    backend_name = "direct"

    def __init__(
        self,
        pipeline_id: str,
        name: str,
        video_reference: str,
        source: SpecSource,
        runtime: InferenceRuntime,
        settings: Settings,
        max_fps: float | None = None,
        parameters: dict | None = None,
        on_result: ResultListener | None = None,
    ) -> None:
        buffer_size = settings.monitoring.result_buffer_size
        super().__init__(pipeline_id, name, video_reference, source.description, buffer_size, on_result)
        self.source = source
        self._runtime, self._settings = runtime, settings
        self._max_fps, self._parameters = max_fps, parameters or {}
        self._settled = threading.Event()  # source running, failed or finished
        self._ended = threading.Event()  # all pipeline threads joined (or never started)
        self._launched = threading.Event()  # InferencePipeline.start() returned (or raised): its dispatcher exists
        self._pipeline: Any = None
        self._drawing: Drawing | None = None  # the workflow's drawing steps, run only for frames someone reads
        self._logged: set[str] = set()  # the scaled notes logged (SAID_SIZES at most)
        # the note of each size the decoder last produced (None: the camera's own size, within the limit); the handle
        # says the note of the frame it last delivered, not of the one decoded last (which runs ahead of inference)
        self._size_notes: dict[tuple[int, int], str | None] = {}
        self._turned: Orientation | None = None  # the spec turns the frames upright first (orientation.py)

    # --- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the threads; returns once the source is open, failed (status `error`) or STARTUP_WAIT passed."""
        if not is_live(self._reference) and not Path(self._reference).expanduser().exists():
            self.fail(f"video file not found: {self.safe_reference}: check the path")
            self._ended.set()
            return
        from inference.core.interfaces.legacy_stream.inference_pipeline import InferencePipeline
        from streamvision.camera.buffer_strategies import BufferConsumptionStrategy, BufferFillingStrategy

        _quiet_source_errors()

        pipeline_class, max_fps = InferencePipeline, self._max_fps
        spec, self._drawing = prepare(self.source.spec, self.source.image_input, self._runtime.compile,
                                      self._parameters)
        self._turned = orientation_of(self.source.spec)  # a turned camera's detections are in its upright frame
        if max_fps is not None and not is_live(self._reference):
            pipeline_class, max_fps = sampled_file(InferencePipeline, max_fps, file_fps(self._reference))
        self.pace.target = max_fps  # what it should deliver: a camera's cap, a file's paced rate (None: flat out)
        depth = queue_depth(self._settings.monitoring.frame_buffer_bytes, self._reference)
        filling, consumption = buffer_strategies(self._reference)  # a camera: its newest frame; a file: every one
        # Frames over media.max_pixels are scaled where they are decoded, before any queue holds them (capture.py).
        source = BoundedSource(capture_reference(self._reference), self._settings.media.max_pixels, self._on_scaled,
                               self.watch)  # ... and its frames and reconnections tell the camera's faults
        try:
            self._pipeline = pipeline_class.init_with_workflow(
                video_reference=source,
                workflow_specification=spec,
                api_key=self._runtime.api_key,
                image_input_name=self.source.image_input,
                workflows_parameters=self._parameters,
                on_prediction=self._on_prediction,
                max_fps=max_fps,
                status_update_handlers=[self._on_status],
                model_manager=self._runtime.model_manager,
                decoding_buffer_size=depth,
                predictions_queue_size=depth,
                source_buffer_filling_strategy=BufferFillingStrategy(filling),
                source_buffer_consumption_strategy=BufferConsumptionStrategy(consumption),
            )
            try:
                self._pipeline.start(use_main_thread=False)
            finally:
                self._launched.set()
        except Exception as exc:  # noqa: BLE001 - becomes the pipeline's error
            self.fail(self._clean(str(translate(exc, self.source.what))))
            self._ended.set()
            return
        self._settled.wait(STARTUP_WAIT)
        if self.status == "error":
            self._ended.wait(STARTUP_WAIT)  # the reaper joins the threads of a failed source

    def pause(self) -> None:
        if self._pipeline is None or self.status not in ("running", "starting"):
            return
        # Files pause where they are; live streams keep their connection and drop frames while muted.
        (self._pipeline.mute_stream if is_live(self._reference) else self._pipeline.pause_stream)()
        self._set_status("paused")

    def resume(self) -> None:
        if self._pipeline is None or self.status != "paused":
            return
        self._pipeline.resume_stream()
        self.watch.link.resumed()  # paused, a file sends nothing: no video loss
        self._set_status("running")

    def terminate(self) -> None:
        """Stop and join every thread of the pipeline (idempotent)."""
        with self._lock:
            if self.status not in ("error", "finished"):
                self.status = "stopped"
        self.watch.link.stop()  # a reconnection waiting its turn ends at once
        if self._pipeline is not None and not self._ended.is_set():
            try:
                self._pipeline.terminate()
            except Exception as exc:  # noqa: BLE001 - a source still initialising; the reaper still joins it
                log.warning("pipeline %s terminate: %s", self.pipeline_id, exc)
        if self._pipeline is not None and not self._ended.wait(30):
            log.warning("pipeline %s threads did not end within 30 s", self.pipeline_id)

    def _reap(self) -> None:
        """Join the pipeline's threads once its inference thread is done, then mark it finished.

        Waits for start() to return first: a source that fails at once ends the inference thread before start()
        has launched the dispatcher, and InferencePipeline.join() then drains the result queue itself — taking
        the end marker the dispatcher, started a moment later, waits for forever (a thread leaked per failure).
        """
        self._launched.wait()
        try:
            self._pipeline.join()
        finally:
            with self._lock:
                if self.status in LIVE:
                    self.status = "finished"
            self._ended.set()
            self._settled.set()

    # --- results -------------------------------------------------------------------------------------------------

    def _on_prediction(self, predictions: Any, video_frame: Any) -> None:
        if isinstance(predictions, list):  # one source: unwrap the batch the sink may hand us
            predictions, video_frame = predictions[0], video_frame[0]
        self._said_size(video_frame.image)
        if predictions is None or self.status == "paused":
            return  # frames decoded before the pause still flow through; a paused pipeline reports nothing
        self.watch.saw(video_frame.image)  # its picture: frozen, black, grey, another size (~50 µs)
        drawing, values = self._drawing, take_values(predictions)
        turned = self._turned
        result = from_workflow_output(
            predictions,
            source_image=turn_frame(video_frame.image, turned) if turned else video_frame.image,
            draw=None if drawing is None else lambda: drawing.draw(video_frame.image, values),
            frame_id=video_frame.frame_id,
            timestamp=video_frame.frame_timestamp.timestamp(),
            max_dimension=self._settings.monitoring.result_image_max_dimension,
        )
        self._deliver(result)

    def _on_scaled(self, width: int, height: int) -> None:
        """The source sends width x height frames now (capture.FrameSizes: each change over media.max_pixels, and the
        change back under it); logged once per size over it (called on the decoding thread). The handle says it
        when such a frame is delivered (_said_size): the decoder runs frames ahead of inference, and a camera that
        flips sizes faster than a 9 MP frame is analysed would otherwise never be said while its frames are; before
        the first frame is delivered, the handle says the size the camera opened with (the start's reply)."""
        max_pixels = self._settings.media.max_pixels
        note = scaled_note(width, height, max_pixels, is_live(self._reference))
        with self._lock:
            decoded = (width, height) if note is None else bounded_size(width, height, max_pixels)
            self._size_notes.pop(decoded, None)  # the latest meaning of a size last, and at most SAID_SIZES + 1
            self._size_notes[decoded] = note
            while len(self._size_notes) > SAID_SIZES + 1:
                del self._size_notes[next(iter(self._size_notes))]
            if not self.frames:  # none delivered yet: the start's reply says what the camera opened with
                self.scaled = note
            if note is None or note in self._logged or len(self._logged) >= SAID_SIZES:
                return
            self._logged.add(note)
        log.warning("pipeline %s: %s", self.pipeline_id, note)

    def _said_size(self, image: Any) -> None:
        """The handle's scaled note follows the frame delivered: the note its decoded size was made with, or None
        for a size never scaled (a camera that never goes over the limit costs one dict lookup a frame)."""
        if not self._size_notes:
            return
        height, width = image.shape[:2]
        note = self._size_notes.get((width, height))
        if note != self.scaled:
            with self._lock:
                self.scaled = note

    # --- status --------------------------------------------------------------------------------------------------

    def _on_status(self, update: Any) -> None:
        event, payload = update.event_type, update.payload or {}
        if event == "INFERENCE_ERROR":
            self.fail(self._source_error(payload))
        elif event == "SOURCE_STATE_UPDATE" and str(getattr(payload.get("new_state"), "value", "")) == "RUNNING":
            if self.status == "starting":
                self._set_status("running")
            self._settled.set()
        elif event == "INFERENCE_THREAD_FINISHED":
            # Called on the inference thread itself, which cannot join itself: a reaper waits for it and the
            # dispatcher, so `finished` is only reported once every result has been delivered.
            threading.Thread(target=self._reap, name=f"reap-{self.pipeline_id}", daemon=True).start()

    def _source_error(self, payload: dict[str, Any]) -> str:
        kind, message = payload.get("error_type", "Error"), self._clean(str(payload.get("error_message", "")))
        if kind == "SourceConnectionError":
            return f"cannot open video source {self.safe_reference}: check the path/URL, camera power and credentials"
        return f"{kind}: {message}"

    def _clean(self, text: str) -> str:
        return text.replace(self._reference, self.safe_reference)

    def fail(self, reason: str) -> None:
        super().fail(reason)
        self._settled.set()

    def _set_status(self, status: str) -> None:
        with self._lock:
            self.status = status

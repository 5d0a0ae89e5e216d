"""One hosted pipeline on an inference server: a poller thread drains its results into a local bounded buffer."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from datetime import datetime
from typing import Any

from bot.backends.base import BackendError, InferenceResult, PipelineHandle, ResultListener
from bot.backends.convert import from_serialized_output, redact_reference

log = logging.getLogger(__name__)
IDLE_POLL = 0.05  # seconds between consume calls when the server had nothing new
FPS_WINDOW = 30


def is_file_reference(reference: str) -> bool:
    return not reference.isdigit() and ("://" not in reference or reference.startswith("file://"))


class HostedPipeline:
    """Mirrors a server-side pipeline: status, results (converted at the boundary), fps, lifecycle."""

    def __init__(
        self, backend: Any, pipeline_id: str, name: str, reference: str, description: str, on_result: ResultListener | None
    ) -> None:
        self._backend = backend
        self.pipeline_id, self.name, self.description = pipeline_id, name, description
        self._reference = reference
        self.safe_reference = redact_reference(reference)
        self._on_result = on_result
        self._buffer: deque[InferenceResult] = deque(maxlen=backend._settings.monitoring.result_buffer_size)
        self._stamps: deque[float] = deque(maxlen=FPS_WINDOW)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.server_id = ""
        self.latest: InferenceResult | None = None
        self.started_at = time.time()
        self.status, self.error, self.frames = "starting", None, 0

    def start(self, server_id: str) -> None:
        self.server_id = server_id
        self._set("running")
        self._thread = threading.Thread(target=self._poll, name=f"hosted-{self.pipeline_id}", daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self.status in ("starting", "running", "paused")

    # --- control -------------------------------------------------------------------------------------------------

    def pause(self) -> None:
        if self.status != "running":
            return
        if is_file_reference(self._reference):
            # The server mutes sources to pause them: on a file that ends the pipeline and drops the rest of it.
            raise BackendError("a hosted pipeline on a video file cannot be paused (the server would end it): stop it instead")
        self._control(self._backend.client().pause_inference_pipeline)
        self._set("paused")

    def resume(self) -> None:
        if self.status != "paused":
            return
        self._control(self._backend.client().resume_inference_pipeline)
        self._set("running")

    def terminate(self) -> None:
        with self._lock:
            if self.status in ("starting", "running", "paused"):
                self.status = "stopped"
        self._stop.set()
        if self.server_id:
            try:
                self._backend.client().terminate_inference_pipeline(self.server_id)
            except Exception as exc:  # noqa: BLE001 - already ended on the server is fine
                log.debug("terminate %s: %s", self.server_id, exc)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _control(self, fn: Any) -> None:
        try:
            fn(self.server_id)
        except Exception as exc:  # noqa: BLE001
            raise self._backend.translate(exc, f"pipeline {self.name}") from exc

    # --- results -------------------------------------------------------------------------------------------------

    def take(self, max_results: int) -> list[InferenceResult]:
        """The newest max_results results, oldest first; the buffer is emptied (older ones are superseded)."""
        with self._lock:
            items = list(self._buffer)[-max_results:] if max_results > 0 else []
            self._buffer.clear()
        return items

    def handle(self) -> PipelineHandle:
        with self._lock:
            fps = None
            if len(self._stamps) > 1 and self._stamps[-1] > self._stamps[0]:
                fps = round((len(self._stamps) - 1) / (self._stamps[-1] - self._stamps[0]), 2)
            return PipelineHandle(
                pipeline_id=self.pipeline_id,
                name=self.name,
                backend="http",
                video_reference=self.safe_reference,
                workflow_description=self.description,
                started_at=self.started_at,
                status=self.status,
                error=self.error,
                fps=fps,
                frames=self.frames,
            )

    def _poll(self) -> None:
        client = self._backend.client()
        while not self._stop.is_set():
            try:
                response = client.consume_inference_pipeline_result(self.server_id)
            except Exception as exc:  # noqa: BLE001 - ends the poller with a status
                self._ended(exc)
                return
            got = self._record(response)
            if not got:
                self._stop.wait(IDLE_POLL)

    def _record(self, response: dict[str, Any]) -> int:
        outputs = response.get("outputs") or []
        metas = response.get("frames_metadata") or [{}] * len(outputs)
        max_dim = self._backend._settings.monitoring.result_image_max_dimension
        n = 0
        for output, meta in zip(outputs, metas, strict=False):
            if not output or self.status == "paused":
                continue
            result = from_serialized_output(
                output, frame_id=meta.get("frame_id"), timestamp=_timestamp(meta.get("frame_timestamp")), max_dimension=max_dim
            )
            with self._lock:
                self._buffer.append(result)
                self.latest = result
                self.frames += 1
                self._stamps.append(time.monotonic())
            n += 1
            if self._on_result is not None:
                try:
                    self._on_result(self.handle(), result)
                except Exception:  # a listener bug must not stop the poller
                    log.exception("result listener failed for pipeline %s", self.pipeline_id)
        return n

    def _ended(self, exc: BaseException) -> None:
        """The server stopped answering for this pipeline: finished (it ran) or error (it never produced)."""
        if self._stop.is_set():
            return
        status = getattr(exc, "status_code", None)
        if status == 404 and self.frames:
            self._set("finished")
        elif status == 404:
            self.fail(
                f"the server could not run the pipeline on {self.safe_reference}: check the path/URL is valid "
                "on the server's machine and the workflow loads"
            )
        else:
            self.fail(str(self._backend.translate(exc, f"pipeline {self.name}")))

    def fail(self, reason: str) -> None:
        with self._lock:
            self.status, self.error = "error", reason

    def _set(self, status: str) -> None:
        with self._lock:
            if self.status not in ("stopped", "error", "finished") or status == "error":
                self.status = status


def _timestamp(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None

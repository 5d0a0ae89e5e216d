"""What a pipeline of either backend keeps: status, a bounded result buffer, fps, its handle and listener delivery."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from bot.backends.base import LIVE, InferenceResult, PipelineHandle, ResultListener
from bot.backends.faults.watch import CameraWatch
from bot.backends.pace import Pace
from bot.media.redaction import redact
from bot.media.sources import is_live

log = logging.getLogger(__name__)


class PipelineBase:
    """The bookkeeping shared by DirectPipeline (in-process threads) and HostedPipeline (server-side); thread-safe."""

    backend_name = ""
    remote_source = False  # the source is opened on an inference server, not here

    def __init__(
        self, pipeline_id: str, name: str, reference: str, description: str, buffer_size: int, on_result: ResultListener | None
    ) -> None:
        self.pipeline_id, self.name, self.description = pipeline_id, name, description
        self._reference = reference
        self.safe_reference = redact(reference)
        self._on_result = on_result
        self._buffer: deque[InferenceResult] = deque(maxlen=buffer_size)
        # the last minute's rate, and what falling short of the rate asked means (each backend sets `pace.target`)
        self.pace = Pace(live=is_live(reference))
        self._lock = threading.Lock()
        self.latest: InferenceResult | None = None
        self.started_at = time.time()
        self.status, self.frames = "starting", 0
        self.error: str | None = None
        self.server: str | None = None  # where it runs, when that is worth saying (several inference servers)
        self.failover: str | None = None  # the last time it was restarted on another server, in words
        self.scaled: str | None = None  # its frames are scaled to media.max_pixels, in words (PipelineHandle.scaled)
        # Its camera's faults, judged from its frames (bot/backends/faults/); a backend feeds it the frames.
        self.watch = CameraWatch(is_live(reference), remote=self.remote_source)

    def is_alive(self) -> bool:
        return self.status in LIVE

    def fail(self, reason: str) -> None:
        with self._lock:
            self.status, self.error = "error", reason

    def take(self, max_results: int) -> list[InferenceResult]:
        """The newest max_results results, oldest first; the buffer is emptied (older ones are superseded)."""
        with self._lock:
            items = list(self._buffer)[-max_results:] if max_results > 0 else []
            self._buffer.clear()
        return items

    def handle(self) -> PipelineHandle:
        faults = self.watch.faults(running=self.status == "running")
        lost = bool(faults) and faults[0].kind == "video" and faults[0].ended is None
        with self._lock:
            running = self.status == "running"
            return PipelineHandle(
                pipeline_id=self.pipeline_id,
                name=self.name,
                backend=self.backend_name,
                video_reference=self.safe_reference,
                workflow_description=self.description,
                started_at=self.started_at,
                status=self.status,
                error=self.error,
                fps=0.0 if lost else self.pace.fps(running),  # no video: nothing comes now
                frames=self.frames,
                server=self.server,
                failover=self.failover,
                scaled=self.scaled,
                asked_fps=self.pace.target,
                short=None if lost else self.pace.short_of(running),
                faults=faults,
            )

    def _deliver(self, result: InferenceResult) -> None:
        """Buffer one result and hand it to the listener (a listener bug must not stop the producing thread)."""
        with self._lock:
            previous, self.latest = self.latest, result
            self._buffer.append(result)
            self.frames += 1
            self.pace.tick(result.frame_id)
        if previous is not None:  # its listeners are done with it: only the newest result keeps pixels to encode
            previous.seal()
        if self._on_result is not None:
            try:
                self._on_result(self.handle(), result)
            except Exception:
                log.exception("result listener failed for pipeline %s", self.pipeline_id)

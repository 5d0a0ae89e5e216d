"""One WebRTC pipeline: an inference_sdk WebRTC session in a thread of its own; data-channel results → InferenceResult."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from bot.backends.base import LIVE, BackendError, ResultListener
from bot.backends.convert import from_serialized_output
from bot.backends.pipeline_base import PipelineBase
from bot.media.sources import is_live

log = logging.getLogger(__name__)


class WebRtcPipeline(PipelineBase):
    """Mirrors a server-side WebRTC worker: results arrive on the data channel (with the annotated frame as an
    output), status follows the session (starting → running on the first result → finished / error / stopped)."""

    backend_name = "webrtc"

    def __init__(
        self, pipeline_id: str, name: str, reference: str, description: str, buffer_size: int,
        max_dimension: int | None, on_result: ResultListener | None, url: str = "",
    ) -> None:
        super().__init__(pipeline_id, name, reference, description, buffer_size, on_result)
        self.url = url  # the server it streams to
        self._max_dim = max_dimension
        self._session: Any = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self.received_at: datetime | None = None  # the server's time it took in the newest frame (benchmarks)

    def start(self, open_session: Callable[[], Any], explain: Callable[[BaseException], str]) -> None:
        """Open the session (connecting takes seconds: the server spawns a worker process) and run it in a thread."""
        self._thread = threading.Thread(target=self._run, args=(open_session, explain), name=f"webrtc-{self.pipeline_id}",
                                        daemon=True)
        self._thread.start()

    def _run(self, open_session: Callable[[], Any], explain: Callable[[BaseException], str]) -> None:
        try:
            session = open_session()
            session.on_data()(self._on_data)
            session.on_error(self._on_errors)
            with self._lock:
                self._session = session
            if self._stopped.is_set():
                session.close()
                return
            session.run()  # blocks until the stream ends or close()
        except Exception as exc:  # noqa: BLE001 - ends the pipeline with one line
            if not self._stopped.is_set():
                self.fail(explain(exc))
            return
        if self.frames and not is_live(self._reference):
            self._move(LIVE, "finished")
        elif not self._stopped.is_set():
            self.fail(f"the WebRTC stream from {self.safe_reference} ended without results: check the source and "
                      "the server's log, then start it again")

    def _on_data(self, data: Any, metadata: Any) -> None:
        if not isinstance(data, dict) or not data or self.status == "paused":
            return
        received = getattr(metadata, "received_at", None)
        self.watch.arrived()  # the camera's frames as the server processed them (none for a while: no video)
        result = from_serialized_output(
            data, frame_id=getattr(metadata, "frame_id", None),
            timestamp=received.timestamp() if isinstance(received, datetime) else None, max_dimension=self._max_dim,
            seen=self.watch.saw,  # its picture (the drawn frame on the data channel): frozen, black, grey, size
        )
        self.received_at = received
        self._move(("starting",), "running")
        self._deliver(result)

    def _on_errors(self, errors: list[str], metadata: Any) -> None:
        log.warning("webrtc pipeline %s: %s", self.pipeline_id, "; ".join(str(e) for e in errors)[:300])

    # --- control -------------------------------------------------------------------------------------------------

    def pause(self) -> None:
        if self.status != "running":
            return
        if not is_live(self._reference):
            raise BackendError("a webrtc pipeline on a video file cannot be paused (the upload runs on): stop it instead")
        self._move(("running",), "paused")  # the server keeps streaming; results are dropped here until resume

    def resume(self) -> None:
        self._move(("paused",), "running")
        self.watch.link.resumed()  # its results were dropped while paused: no video loss

    def terminate(self) -> None:
        """Close the session (idempotent) and wait for its thread."""
        with self._lock:
            if self.status in LIVE:
                self.status = "stopped"
            session = self._session
        self._stopped.set()
        if session is not None:
            try:
                session.close()
            except Exception as exc:  # noqa: BLE001 - a session already torn down is fine
                log.debug("close %s: %s", self.pipeline_id, exc)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def _move(self, from_: Collection[str], to: str) -> None:
        with self._lock:
            if self.status in from_:
                self.status = to

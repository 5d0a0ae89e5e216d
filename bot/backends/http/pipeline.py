"""One hosted pipeline on an inference server: a poller thread drains its results into a local bounded buffer."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

from bot.backends.base import LIVE, BackendError, ResultListener
from bot.backends.convert import from_serialized_output
from bot.backends.http.failover import carried, counts_of, move
from bot.backends.http.reopen import camera_gone, reopen
from bot.backends.pipeline_base import PipelineBase
from bot.media.sources import is_live

log = logging.getLogger(__name__)
IDLE_POLL = 0.05  # seconds between consume calls when the server had nothing new


class HostedPipeline(PipelineBase):
    """Mirrors a server-side pipeline: status, results (converted at the boundary), fps, lifecycle."""

    backend_name = "http"
    remote_source = True  # the server opens the camera: a video loss is results that stop coming, and when the server
    # ends the pipeline of a camera that went away, it is started again there (reopen.py)

    def __init__(
        self, backend: Any, pipeline_id: str, name: str, reference: str, description: str, on_result: ResultListener | None
    ) -> None:
        buffer_size = backend._settings.monitoring.result_buffer_size
        super().__init__(pipeline_id, name, reference, description, buffer_size, on_result)
        self.backend = backend
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.server_id = ""
        self.url = ""  # the server it runs on
        self.launch: dict | None = None  # what starts it on a server (None: it cannot move)
        self._carry: dict[str, float] = {}  # line totals counted before its last restart elsewhere

    def place(self, url: str, launch: dict | None) -> None:
        """It runs on the server at `url`, started with `launch` (so another server can start it the same way)."""
        self.url, self.launch = url, launch
        self.server = self.backend.servers.label(url) if self.backend.servers.several else None

    def start(self, server_id: str, paused: bool = False) -> None:
        """Poll the server-side pipeline `server_id` (paused: it was paused on the server before we adopted it)."""
        self.server_id = server_id
        self._set("paused" if paused else "running")
        self._thread = threading.Thread(target=self._poll, name=f"hosted-{self.pipeline_id}", daemon=True)
        self._thread.start()

    # --- control -------------------------------------------------------------------------------------------------

    def pause(self) -> None:
        if self.status != "running":
            return
        if not is_live(self._reference):
            # The server mutes sources to pause them: on a file that ends the pipeline and drops the rest of it.
            raise BackendError("a hosted pipeline on a video file cannot be paused (the server would end it): stop it instead")
        self._control(self.backend.client(self.url).pause_inference_pipeline)
        self._set("paused")

    def resume(self) -> None:
        if self.status != "paused":
            return
        self._control(self.backend.client(self.url).resume_inference_pipeline)
        self.watch.link.resumed()  # no results while paused: no video loss
        self._set("running")

    def terminate(self) -> None:
        """Stop polling and end the server-side pipeline; the server is asked once however often this is called."""
        with self._lock:
            if self.status in LIVE:
                self.status = "stopped"
            first = not self._stop.is_set()
            self._stop.set()
        self.watch.link.stop()  # a reopening waiting its turn ends at once
        if first and self.server_id:
            try:
                self.backend.end_on(self.url, self.server_id)
            except Exception as exc:  # noqa: BLE001 - already ended on the server is fine
                log.debug("terminate %s: %s", self.server_id, exc)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)

    def stopping(self) -> bool:
        return self._stop.is_set()

    def carried(self) -> dict[str, float]:
        with self._lock:
            return dict(self._carry)

    def carry_on(self, totals: dict[str, float]) -> None:
        """Totals counted before a bot restart on servers it left (saved with it): added onto this server's."""
        with self._lock:
            self._carry = {k: float(v) for k, v in totals.items() if isinstance(v, int | float)}

    def reopened(self, server_id: str) -> None:
        """It runs again on its server as `server_id` (its camera had gone away: reopen.py)."""
        with self._lock:
            self._carry = counts_of(self.latest.values) if self.latest is not None else self._carry
            self.server_id = server_id

    def pause_for(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def moved_to(self, url: str, server_id: str, old: str, why: str = "stopped answering") -> None:
        """It was started again on `url` after `old` stopped answering (`why`): poll it there, its counts carried on."""
        label = self.backend.servers.label
        with self._lock:
            self._carry = counts_of(self.latest.values) if self.latest is not None else self._carry
            self.url, self.server_id, self.server = url, server_id, label(url)
            at = datetime.now(UTC).strftime("%H:%M UTC")
            counts = ", counts carry on" if self._carry else ""
            self.failover = f"restarted on {label(url)} at {at} ({label(old)} {why}){counts}"
            paused = self.status == "paused"
        if self._stop.is_set():  # stopped while it was being moved: end the new copy too
            self.backend.end_on(url, server_id)
        elif paused:
            try:
                self._control(self.backend.client(url).pause_inference_pipeline)
            except BackendError as exc:  # it runs, unpaused: the results are still dropped here while paused
                log.warning("pipeline %s: could not pause it on %s: %s", self.name, self.server, exc)

    def _control(self, fn: Any) -> None:
        try:
            fn(self.server_id)
        except Exception as exc:  # noqa: BLE001
            raise self.backend.translate(exc, f"pipeline {self.name}") from exc

    # --- results -------------------------------------------------------------------------------------------------

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                response = self.backend.consume(self.url, self.server_id)
            except Exception as exc:  # noqa: BLE001 - ends the poller with a status, unless another server takes it
                if move(self, exc):
                    continue
                if camera_gone(self, exc, self._reference) and reopen(self):  # a live camera never ends
                    continue
                self._ended(exc)
                return
            got = self._record(response)
            if not got:
                self._stop.wait(IDLE_POLL)

    def _record(self, response: dict[str, Any]) -> int:
        outputs = response.get("outputs") or []
        metas = response.get("frames_metadata") or [{}] * len(outputs)
        max_dim = self.backend._settings.monitoring.result_image_max_dimension
        n = 0
        for output, meta in zip(outputs, metas, strict=False):
            if not output or self.status == "paused":
                continue
            self.watch.arrived()  # the camera's frames as the server processed them (no result for a while: no video)
            result = from_serialized_output(
                output, frame_id=meta.get("frame_id"), timestamp=_timestamp(meta.get("frame_timestamp")), max_dimension=max_dim,
                seen=self.watch.saw,  # its picture (the drawn frame the server returns): frozen, black, grey, size
            )
            self._deliver(result.with_values(carried(result.values, self._carry)) if self._carry else result)
            n += 1
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
            self.fail(str(self.backend.translate(exc, f"pipeline {self.name}", self.url)))

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

"""The InferenceBackend protocol and the one typed result both backends return (converted at the boundary)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from bot.backends.faults.kinds import Fault


class BackendError(Exception):
    """A failure a user or the model can act on; str() is a one-line message saying what to do next."""


@dataclass(frozen=True)
class Detection:
    """One detected object, in pixel coordinates of the source frame."""

    class_name: str
    confidence: float
    xyxy: tuple[float, float, float, float]
    tracker_id: int | None = None
    time_in_zone: float | None = None  # seconds inside the zone (a time_in_zone step); None: no zone in the workflow


class LazyJpeg:
    """A result's frame, drawn and JPEG-encoded the first time someone asks for it (an alert, a snapshot, a clip at
    its own rate, the agent): most frames of a camera are never seen. `seal()` lets go of the pixels once a newer
    result supersedes this one, so a pipeline holds one raw frame, not its whole result buffer of them."""

    made = 0  # JPEGs made in this process (benches and tests count encodes with it)
    _count_lock = threading.Lock()

    def __init__(self, make: Callable[[], bytes | None]) -> None:
        self._make: Callable[[], bytes | None] | None = make
        self._value: bytes | None = None
        self._lock = threading.Lock()

    def get(self) -> bytes | None:
        with self._lock:
            if self._make is not None:
                make, self._make = self._make, None
                self._value = make()
                with LazyJpeg._count_lock:
                    LazyJpeg.made += 1
            return self._value

    def seal(self) -> None:
        """No JPEG from now on unless one was already made (the source pixels are released)."""
        with self._lock:
            self._make = None


@dataclass(frozen=True, init=False)
class InferenceResult:
    """Unified result of one image / one video frame, whatever the backend.

    detections: objects from the workflow's detection output(s).
    values: the other JSON-able workflow outputs by name (e.g. line counter `count_in` / `count_out`,
        time-in-zone, classification labels); large or binary values are dropped at conversion.
    frame: the annotated frame as JPEG bytes (drawn by the workflow's visualization or by supervision), made when
        first read (a LazyJpeg) for pipeline results; None once a newer result sealed it unread.
    """

    detections: tuple[Detection, ...] = ()
    values: dict[str, Any] = field(default_factory=dict)
    frame_id: int | None = None
    timestamp: float = field(default_factory=time.time)
    image_size: tuple[int, int] | None = None  # (width, height)
    _jpeg: LazyJpeg | bytes | None = field(default=None, repr=False, compare=False)

    def __init__(
        self, detections: tuple[Detection, ...] = (), values: dict[str, Any] | None = None,
        frame: LazyJpeg | bytes | None = None, frame_id: int | None = None, timestamp: float | None = None,
        image_size: tuple[int, int] | None = None,
    ) -> None:
        set_ = object.__setattr__  # frozen: the one place fields are written
        set_(self, "detections", detections)
        set_(self, "values", {} if values is None else values)
        set_(self, "_jpeg", frame)
        set_(self, "frame_id", frame_id)
        set_(self, "timestamp", time.time() if timestamp is None else timestamp)
        set_(self, "image_size", image_size)

    @property
    def frame(self) -> bytes | None:
        return self._jpeg.get() if isinstance(self._jpeg, LazyJpeg) else self._jpeg

    def with_values(self, values: dict[str, Any]) -> InferenceResult:
        """The same result with other values; its frame (made or still lazy) is shared, not made now.
        (dataclasses.replace cannot: it would pass the private `_jpeg` field to __init__.)"""
        return InferenceResult(self.detections, values, self._jpeg, self.frame_id, self.timestamp, self.image_size)

    def seal(self) -> None:
        """A newer result superseded this one: its frame is made now only if it was already asked for."""
        if isinstance(self._jpeg, LazyJpeg):
            self._jpeg.seal()

    def counts(self) -> dict[str, int]:
        """Detections per class name."""
        out: dict[str, int] = {}
        for d in self.detections:
            out[d.class_name] = out.get(d.class_name, 0) + 1
        return out

    def as_data(self) -> dict[str, Any]:
        """The result as JSON-able data, for the doors that hand structure on (REST's body, MCP's structured content):
        the image's size, counts per class, each detection (pixels of the source image) and the other values."""
        def one(d: Detection) -> dict[str, Any]:
            out: dict[str, Any] = {"class_name": d.class_name, "confidence": round(float(d.confidence), 4),
                                   "xyxy": [round(float(v), 1) for v in d.xyxy]}
            if d.tracker_id is not None:
                out["tracker_id"] = d.tracker_id
            if d.time_in_zone is not None:
                out["time_in_zone"] = d.time_in_zone
            return out

        return {"image_size": list(self.image_size) if self.image_size else None, "counts": self.counts(),
                "detections": [one(d) for d in self.detections], "values": self.values}


@dataclass(frozen=True)
class PipelineHandle:
    """A pipeline, backend-agnostic. video_reference and error are always credential-redacted."""

    pipeline_id: str
    name: str
    backend: str  # "direct" | "http"
    video_reference: str
    workflow_description: str
    started_at: float
    status: str  # "starting" | "running" | "paused" | "stopped" | "finished" | "error"
    error: str | None = None
    fps: float | None = None
    frames: int = 0
    server: str | None = None  # where it runs when the http backend has several servers, e.g. ":9002"
    # The last failover, in words: "restarted on :9002 at 14:03 UTC (:9001 stopped answering), counts carry on" (the
    # pipeline was restarted on another inference server; `server` is where it runs now). Not the line's points.
    failover: str | None = None
    # Its frames are over media.max_pixels and scaled at decode, in words with what to do: "the camera sends
    # 12000×12000 frames (144 MP), over media.max_pixels (40 MP): frames are scaled to 6000×6000 (36 MP); …"
    # (bot/media/frame_limit.py). None: its frames are within the limit (or not seen yet).
    scaled: str | None = None
    # The rate it was asked to deliver (fps=, or a file's own rate when fps= is above it); None: as fast as it goes.
    asked_fps: float | None = None
    # Delivering under that for the last minute, in words with what to do: "3.3 of 10 fps: CPU-bound; lower fps or
    # size" (bot/backends/pace.py). None: it keeps up, or was asked for no rate. `fps` is the last minute's rate.
    short: str | None = None
    # What is wrong with its camera (bot/backends/faults/): the faults on now, then those ended lately, each with
    # when it began (and ended); the status line shows those on, the health check says each start and end once.
    faults: tuple[Fault, ...] = ()

    def with_(self, **changes: Any) -> PipelineHandle:
        return replace(self, **changes)


# The statuses of a pipeline that runs or may run on (the one definition: backends, the table, health, the API).
LIVE = frozenset({"starting", "running", "paused"})

@dataclass(frozen=True)
class WorkflowRef:
    """What a pipeline runs, named one of three ways: an inline spec, a saved workflow (workspace + id), or a model id
    (wrapped into a detection workflow; `confidence` its threshold). `bot.backends.shared.inline_spec` reads it."""

    model_id: str | None = None
    workflow_spec: dict | None = None
    workspace_name: str | None = None
    workflow_id: str | None = None
    confidence: float | None = None


ResultListener = Callable[[PipelineHandle, InferenceResult], None]  # called from the producing thread; keep it cheap


@runtime_checkable
class InferenceBackend(Protocol):
    """One interface for the direct (in-process) and http (inference server) backends."""

    name: str

    async def run_single(
        self,
        image: bytes,
        model_id: str | None = None,
        workflow_spec: dict | None = None,
        workspace_name: str | None = None,
        workflow_id: str | None = None,
        parameters: dict | None = None,
        confidence: float | None = None,
    ) -> InferenceResult: ...

    async def start_pipeline(
        self,
        pipeline_id: str,
        name: str,
        video_reference: str,
        ref: WorkflowRef,  # a model id is wrapped into a detection workflow (tracker + annotations)
        max_fps: float | None = None,
        parameters: dict | None = None,
        on_result: ResultListener | None = None,
    ) -> PipelineHandle: ...

    async def consume_results(self, pipeline_id: str, max_results: int = 5) -> list[InferenceResult]: ...

    def latest_result(self, pipeline_id: str) -> InferenceResult | None: ...

    async def stop_pipeline(self, pipeline_id: str) -> PipelineHandle: ...

    async def pause_pipeline(self, pipeline_id: str) -> PipelineHandle: ...

    async def resume_pipeline(self, pipeline_id: str) -> PipelineHandle: ...

    async def list_pipelines(self) -> list[PipelineHandle]: ...

    async def get_pipeline_status(self, pipeline_id: str) -> PipelineHandle: ...

    async def describe_blocks(self) -> list[dict[str, Any]]: ...

    async def validate_workflow(self, spec: dict) -> list[str]:
        """Problems with the spec (empty list = valid)."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class AdoptingBackend(Protocol):
    """A backend whose pipelines run outside this process (an inference server) and so outlive a crash of it."""

    def server_id(self, pipeline_id: str) -> str | None:
        """The server's id of our pipeline, to persist; None when it never reached the server."""
        ...

    def server_of(self, pipeline_id: str) -> str | None:
        """The URL of the server that runs it (it changes when its server stops answering); None if none does."""
        ...

    def carried(self, pipeline_id: str) -> dict[str, float]:
        """Line totals it counted on servers it left (added onto its own server's), to persist with it."""
        ...

    async def adopt_pipeline(
        self,
        pipeline_id: str,
        server_id: str,
        name: str,
        video_reference: str,
        ref: WorkflowRef,
        on_result: ResultListener | None = None,
        paused: bool = False,
        server: str | None = None,
        max_fps: float | None = None,
        parameters: dict | None = None,
        carried: dict[str, float] | None = None,
    ) -> PipelineHandle | None:
        """Consume again a pipeline the server still runs (no second copy is started); None if it is gone."""
        ...

"""Shared pieces for monitor / heartbeat / scheduler tests: a recording sink, a fake clock, a pipeline registry."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bot.backends.base import Detection, InferenceResult, PipelineHandle
from bot.monitoring.alerts import Alert, AlertRouter
from tests.fakes.waits import patience

JPEG = b"\xff\xd8\xff\xe0fake-annotated-frame\xff\xd9"


class RecordingSink:
    """An alert sink that keeps what it was given (the way the CLI print sink or Slack sink would receive it)."""

    def __init__(self) -> None:
        self.received: list[tuple[Alert, str | None]] = []

    async def __call__(self, alert: Alert, channel: str | None) -> None:
        self.received.append((alert, channel))

    @property
    def alerts(self) -> list[Alert]:
        return [a for a, _ in self.received]


class Clock:
    """A settable clock shared by the router, the monitor and the heartbeat."""

    def __init__(self, start: float = 1_772_000_000.0) -> None:  # 2026-02-25
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakePipelines:
    """The slice of PipelineManager the monitor and heartbeat use: listeners, handles, latest results."""

    def __init__(self) -> None:
        self.listeners: list[Any] = []
        self.handles: dict[str, PipelineHandle] = {}
        self.latest_results: dict[str, InferenceResult] = {}

    def add_result_listener(self, fn: Any) -> None:
        self.listeners.append(fn)

    def add(
        self, name: str, status: str = "running", video: str = "rtsp://cam.local/stream", **kw: Any
    ) -> PipelineHandle:
        h = PipelineHandle(
            f"p_{name}", name, "direct", video, "test workflow", kw.pop("started_at", time.time()), status, **kw
        )
        self.handles[h.pipeline_id] = h
        return h

    def set(self, name: str, **changes: Any) -> None:
        self.handles[f"p_{name}"] = self.handles[f"p_{name}"].with_(**changes)

    def push(self, name: str, result: InferenceResult) -> None:
        h = self.handles[f"p_{name}"]
        self.latest_results[h.pipeline_id] = result
        for fn in self.listeners:
            fn(h, result)

    def snapshot(self) -> list[PipelineHandle]:
        return list(self.handles.values())

    async def list(self) -> list[PipelineHandle]:
        return self.snapshot()

    def latest(self, name_or_id: str) -> InferenceResult | None:
        pid = name_or_id if name_or_id in self.handles else f"p_{name_or_id}"
        return self.latest_results.get(pid)


def result(
    faces: int = 0, count_in: int | None = None, count_out: int = 0, frame: bytes = JPEG, **values: Any
) -> InferenceResult:
    dets = tuple(Detection("face", 0.9, (10.0 * i, 10.0, 10.0 * i + 8, 18.0), i) for i in range(faces))
    if count_in is not None:
        values = {**values, "line_counter_count_in": count_in, "line_counter_count_out": count_out}
    return InferenceResult(detections=dets, values=values, frame=frame)


def dwell_result(*objects: tuple[str, int, float], frame: bytes = JPEG) -> InferenceResult:
    """A zone pipeline's result: (class, tracker id, seconds in zone) per object, as the converter builds it."""
    dets = tuple(Detection(c, 0.9, (10.0 * i, 10.0, 10.0 * i + 8, 18.0), tid, secs)
                 for i, (c, tid, secs) in enumerate(objects))
    return InferenceResult(detections=dets, frame=frame)


def make_router(tmp_path: Path, clock: Clock, cooldown: float = 300.0, **kw: Any) -> tuple[AlertRouter, RecordingSink]:
    router = AlertRouter(
        tmp_path / ".state" / "alerts.json", default_channel="C_ALERTS", cooldown_seconds=cooldown, clock=clock, **kw
    )
    sink = RecordingSink()
    router.add_sink(sink)
    return router, sink


async def run_to_end(mgr: Any, name: str, timeout: float = 40.0) -> None:
    """Wait until a real pipeline on a video file has finished (or failed)."""
    import asyncio

    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        await mgr.list()  # refreshes statuses from the backend
        if mgr.resolve(name).status not in ("starting", "running"):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} still running after {timeout}s")

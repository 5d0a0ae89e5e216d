"""An in-memory InferenceBackend built on the real result types, for manager/tool/command logic tests."""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path
from typing import Any

from bot.backends.base import BackendError, Detection, InferenceResult, PipelineHandle, ResultListener, WorkflowRef
from bot.backends.policy import check_spec
from bot.backends.workflows import describe_spec
from bot.config import InferenceConfig

# The real backends apply the block policy at every entry point; the fake does too, with the default config.
POLICY = InferenceConfig()


def result(counts: dict[str, int], frame_id: int | None = 1, frame: bytes | None = b"\xff\xd8\xffframe", **values: Any) -> InferenceResult:
    """A result with `counts[name]` detections of each class, tracker ids 1..n, confidences 0.9 downwards."""
    dets, tid = [], 1
    for name, n in counts.items():
        for i in range(n):
            dets.append(Detection(name, round(0.9 - 0.05 * i, 2), (10.0 * i, 0.0, 10.0 * i + 5, 5.0), tracker_id=tid))
            tid += 1
    return InferenceResult(tuple(dets), dict(values), frame, frame_id, time.time() + (frame_id or 0) * 0.1, (640, 480))


class FakeBackend:
    """Pipelines are records; tests push results with `emit`. A missing video file fails to start, like a real one."""

    name = "fake"

    def __init__(self, single: InferenceResult | None = None, fail_single: str | None = None) -> None:
        self.single = single or result({"face": 1})
        self.fail_single = fail_single
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.handles: dict[str, PipelineHandle] = {}
        self.listeners: dict[str, ResultListener] = {}
        self.buffers: dict[str, deque[InferenceResult]] = {}
        self.latest: dict[str, InferenceResult] = {}
        self.closed = False
        self.blocks: list[dict[str, Any]] = []

    async def run_single(self, image: bytes, **kw: Any) -> InferenceResult:
        problems = check_spec(kw["workflow_spec"], POLICY) if kw.get("workflow_spec") is not None else []
        if problems:
            raise BackendError("workflow refused: " + "; ".join(problems))
        self.calls.append(("run_single", {"image": image, **kw}))
        if self.fail_single:
            raise BackendError(self.fail_single)
        return self.single

    async def start_pipeline(self, pipeline_id: str, name: str, video_reference: str, ref: WorkflowRef,
                             max_fps: float | None = None, parameters: dict | None = None, on_result=None) -> PipelineHandle:
        kw = {"workflow_spec": ref.workflow_spec, "workspace_name": ref.workspace_name, "workflow_id": ref.workflow_id,
              "max_fps": max_fps, "parameters": parameters}
        self.calls.append(("start_pipeline", {"pipeline_id": pipeline_id, "video_reference": video_reference, **kw}))
        if video_reference.startswith("/") and not Path(video_reference).is_file():
            raise BackendError(f"cannot open video source {video_reference}: no such file")
        spec = kw.get("workflow_spec") or {}
        desc = spec.get("description") or (describe_spec(spec) if spec.get("steps") else "a workflow")  # as the real ones
        h = PipelineHandle(pipeline_id, name, self.name, video_reference, desc, time.time(), "running")
        if video_reference.endswith(".broken"):  # opens, then fails on the first read, as a corrupt file does
            h = h.with_(status="error", error="cannot read frames from the source")
        self.handles[pipeline_id] = h
        self.listeners[pipeline_id] = on_result
        self.buffers[pipeline_id] = deque(maxlen=64)
        return h

    def emit(self, pipeline_id: str, res: InferenceResult) -> None:
        self.buffers[pipeline_id].append(res)
        self.latest[pipeline_id] = res
        if self.listeners.get(pipeline_id):
            self.listeners[pipeline_id](self.handles[pipeline_id], res)

    def _get(self, pid: str) -> PipelineHandle:
        if pid not in self.handles:
            raise BackendError(f"no pipeline {pid}")
        return self.handles[pid]

    async def consume_results(self, pipeline_id: str, max_results: int = 5) -> list[InferenceResult]:
        buf = self.buffers.get(pipeline_id, deque())
        return [buf.popleft() for _ in range(min(max_results, len(buf)))]

    def latest_result(self, pipeline_id: str) -> InferenceResult | None:
        return self.latest.get(pipeline_id)

    async def _set(self, pid: str, status: str) -> PipelineHandle:
        self.calls.append((status, {"pipeline_id": pid}))
        self.handles[pid] = self._get(pid).with_(status=status)
        return self.handles[pid]

    async def stop_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._set(pipeline_id, "stopped")

    async def pause_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._set(pipeline_id, "paused")

    async def resume_pipeline(self, pipeline_id: str) -> PipelineHandle:
        return await self._set(pipeline_id, "running")

    async def list_pipelines(self) -> list[PipelineHandle]:
        return list(self.handles.values())

    async def get_pipeline_status(self, pipeline_id: str) -> PipelineHandle:
        return self._get(pipeline_id)

    async def describe_blocks(self) -> list[dict[str, Any]]:
        return self.blocks

    async def validate_workflow(self, spec: dict) -> list[str]:
        return check_spec(spec, POLICY) or ([] if spec.get("steps") else ["the workflow has no steps"])

    async def close(self) -> None:
        self.closed = True


class FakeServer:
    """The pipelines an inference server runs: they outlive the FakeServerBackend (one bot process) that started them."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.started = 0


class FakeServerBackend(FakeBackend):
    """A FakeBackend whose pipelines live on a FakeServer, so a new process can adopt them (see AdoptingBackend)."""

    name = "http"

    def __init__(self, server: FakeServer) -> None:
        super().__init__()
        self.server = server
        self.server_ids: dict[str, str] = {}

    async def start_pipeline(self, *args: Any, **kw: Any) -> PipelineHandle:
        handle = await super().start_pipeline(*args, **kw)
        pipeline_id = handle.pipeline_id
        self.server.started += 1
        self.server_ids[pipeline_id] = f"srv-{self.server.started}"
        self.server.running.add(self.server_ids[pipeline_id])
        return handle

    def server_id(self, pipeline_id: str) -> str | None:
        return self.server_ids.get(pipeline_id)

    def server_of(self, pipeline_id: str) -> str | None:
        return "http://fake-server" if pipeline_id in self.server_ids else None

    def carried(self, pipeline_id: str) -> dict[str, float]:
        return {}

    async def adopt_pipeline(
        self, pipeline_id: str, server_id: str, name: str, video_reference: str, ref: WorkflowRef, on_result=None,
        paused: bool = False, server: str | None = None, max_fps: float | None = None, parameters: dict | None = None,
        carried: dict[str, float] | None = None,
    ) -> PipelineHandle | None:
        kw = {"workflow_spec": ref.workflow_spec, "workspace_name": ref.workspace_name, "workflow_id": ref.workflow_id}
        self.calls.append(("adopt_pipeline", {"pipeline_id": pipeline_id, "server_id": server_id, "paused": paused, **kw}))
        if server_id not in self.server.running:
            return None
        status = "paused" if paused else "running"
        self.handles[pipeline_id] = PipelineHandle(pipeline_id, name, self.name, video_reference, "adopted", time.time(), status)
        self.listeners[pipeline_id] = on_result
        self.buffers[pipeline_id] = deque(maxlen=64)
        self.server_ids[pipeline_id] = server_id
        return self.handles[pipeline_id]

    async def stop_pipeline(self, pipeline_id: str) -> PipelineHandle:
        self.server.running.discard(self.server_ids.get(pipeline_id, ""))
        return await super().stop_pipeline(pipeline_id)

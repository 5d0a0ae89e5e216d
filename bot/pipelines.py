"""PipelineManager: names pipelines, resolves them by id or name, persists the active set, restores it on start-up."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.backends.base import (
    AdoptingBackend,
    BackendError,
    InferenceBackend,
    InferenceResult,
    PipelineHandle,
    ResultListener,
)
from bot.pipeline_state import PipelineConfig, PipelineNotFound, load_state, save_state
from bot.redaction import redact

__all__ = ["LIVE", "PipelineConfig", "PipelineManager", "PipelineNotFound"]
log = logging.getLogger(__name__)

LIVE = ("starting", "running", "paused")


class PipelineManager:
    """All pipelines of this process, over one backend created on first use."""

    def __init__(self, backend_factory: Callable[[], InferenceBackend], state_path: Path, settings: Any) -> None:
        self._factory = backend_factory
        self._backend: InferenceBackend | None = None
        self.state_path = Path(state_path)
        self.settings = settings
        self._handles: dict[str, PipelineHandle] = {}
        self._configs: dict[str, PipelineConfig] = {}
        self._frames: dict[str, int] = {}
        self._listeners: list[ResultListener] = []
        self._lock = threading.Lock()  # guards handles/frames: results arrive on pipeline threads
        self._start_lock = asyncio.Lock()

    # backend ------------------------------------------------------------
    @property
    def backend(self) -> InferenceBackend:
        if self._backend is None:
            self._backend = self._factory()
        return self._backend

    # lookup -------------------------------------------------------------
    def resolve(self, name_or_id: str) -> PipelineHandle:
        """The pipeline with this id or name (case-insensitive), else PipelineNotFound listing the known ones."""
        key = str(name_or_id).strip()
        with self._lock:
            handles = list(self._handles.values())
        for match in (
            lambda h: h.pipeline_id == key,
            lambda h: h.name == key,
            lambda h: h.name.lower() == key.lower(),
        ):
            found = [(i, h) for i, h in enumerate(handles) if match(h)]
            if found:  # a live pipeline wins over a stopped one with the same name, then the newest
                best = min(found, key=lambda t: (t[1].status not in LIVE, -t[0]))[1]
                return best.with_(frames=max(best.frames, self._frames.get(best.pipeline_id, 0)))
        known = ", ".join(f"{h.name} ({h.pipeline_id}, {h.status})" for h in handles) or "none"
        raise PipelineNotFound(f"no pipeline {key!r}; known pipelines: {known}. Use list_pipelines or start one.")

    def snapshot(self) -> list[PipelineHandle]:
        """The handles as last seen, without asking the backend (safe from any thread)."""
        with self._lock:
            return [h.with_(frames=max(h.frames, self._frames.get(h.pipeline_id, 0))) for h in self._handles.values()]

    async def list(self) -> list[PipelineHandle]:
        """All pipelines, statuses refreshed from the backend."""
        for handle in self.snapshot():
            if handle.status in LIVE:
                await self._refresh(handle.pipeline_id)
        return self.snapshot()

    async def status(self, name_or_id: str) -> PipelineHandle:
        """One pipeline, its status refreshed from the backend."""
        handle = self.resolve(name_or_id)
        if handle.status in LIVE:
            await self._refresh(handle.pipeline_id)
        return self.resolve(handle.pipeline_id)

    def config(self, name_or_id: str) -> PipelineConfig:
        return self._configs[self.resolve(name_or_id).pipeline_id]

    # listeners ----------------------------------------------------------
    def add_result_listener(self, fn: ResultListener) -> None:
        """fn(handle, result) for every result of every pipeline, called on the producing thread."""
        self._listeners.append(fn)

    def _on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        pid = handle.pipeline_id
        with self._lock:
            self._frames[pid] = self._frames.get(pid, 0) + 1
            mine = self._handles.get(pid, handle)
            current = mine.with_(frames=max(mine.frames, self._frames[pid]))
        for fn in list(self._listeners):
            try:
                fn(current, result)
            except Exception:  # one broken listener must not stop the others or the pipeline
                log.exception("pipeline result listener failed")

    # state --------------------------------------------------------------
    def _set(self, handle: PipelineHandle) -> PipelineHandle:
        handle = handle.with_(video_reference=redact(handle.video_reference))
        with self._lock:
            self._handles[handle.pipeline_id] = handle
        return handle

    def _save(self) -> None:
        with self._lock:
            # live and failed ones come back on restart; stopped (by the user) and finished ones do not
            keep = [c for pid, c in self._configs.items() if pid in self._handles and self._handles[pid].status in (*LIVE, "error")]
        save_state(self.state_path, keep)

    async def _refresh(self, pid: str) -> PipelineHandle:
        try:
            fresh = await self.backend.get_pipeline_status(pid)
        except BackendError as exc:
            fresh = self._handles[pid].with_(status="error", error=str(exc))
        handle = self._set(fresh.with_(name=self._handles[pid].name))
        if handle.status == "finished":
            self._save()  # a finished file must not replay on the next start-up
        return handle

    # lifecycle ----------------------------------------------------------
    def _unique_name(self, name: str) -> str:
        name = (name or "").strip()
        if not name:
            raise BackendError("a pipeline needs a name, e.g. the camera name.")
        for h in self.snapshot():
            if h.name.lower() == name.lower() and h.status in LIVE:
                raise BackendError(f"a pipeline named {name!r} is already {h.status} (id {h.pipeline_id}); stop it or pick another name.")
        return name

    def _new_id(self) -> str:
        while True:
            pid = f"pipe_{secrets.token_hex(3)}"
            if pid not in self._handles:
                return pid

    @staticmethod
    def _spec_of(cfg: PipelineConfig) -> dict | None:
        """The spec a pipeline runs: a model id becomes a detection workflow; None for a saved workflow."""
        from bot.backends.workflows import detection_workflow

        if cfg.workflow_spec is None and cfg.workflow_id is None:
            if not cfg.model_id:
                raise BackendError("give model_id (e.g. 'builtin/people'), a workflow_spec, or workspace_name + workflow_id.")
            return detection_workflow(cfg.model_id)
        return cfg.workflow_spec

    async def _workflow_for(self, cfg: PipelineConfig) -> dict | None:
        """The spec to deploy; an inline spec is checked first."""
        from bot.backends.workflows import check_spec

        if cfg.workflow_spec is None:
            return self._spec_of(cfg)
        problems = list(check_spec(cfg.workflow_spec, self.settings.inference.allow_custom_python) or [])
        if not problems:  # custom Python is refused before the spec gets anywhere near a compiler
            problems = list(await self.backend.validate_workflow(cfg.workflow_spec) or [])
        if problems:
            raise BackendError("workflow_spec is invalid: " + "; ".join(problems[:5]) + ". Fix the spec and try again.")
        return cfg.workflow_spec

    async def _launch(self, cfg: PipelineConfig) -> PipelineHandle:
        spec = await self._workflow_for(cfg)
        try:
            handle = await self.backend.start_pipeline(
                cfg.pipeline_id, cfg.name, cfg.video_reference, workflow_spec=spec,
                workspace_name=cfg.workspace_name, workflow_id=cfg.workflow_id, max_fps=cfg.max_fps,
                parameters=cfg.parameters, on_result=self._on_result,
            )
        except BaseException:
            await self._cleanup(cfg.pipeline_id)  # nothing half-started is left behind
            raise
        backend = self.backend
        cfg.server_id = backend.server_id(cfg.pipeline_id) if isinstance(backend, AdoptingBackend) else None
        if cfg.paused and handle.status in LIVE:
            handle = await self.backend.pause_pipeline(cfg.pipeline_id)
        return handle

    async def _adopt(self, cfg: PipelineConfig) -> PipelineHandle | None:
        """The pipeline as the inference server kept running it while this process was down (no second copy)."""
        backend = self.backend
        if not cfg.server_id or not isinstance(backend, AdoptingBackend):
            return None
        handle = await backend.adopt_pipeline(
            cfg.pipeline_id, cfg.server_id, cfg.name, cfg.video_reference, workflow_spec=self._spec_of(cfg),
            workspace_name=cfg.workspace_name, workflow_id=cfg.workflow_id, on_result=self._on_result, paused=cfg.paused,
        )
        if handle is None:
            log.info("pipeline %s is no longer on the inference server; starting it again", cfg.name)
        else:
            log.info("pipeline %s (%s) adopted: the inference server kept running it", cfg.name, cfg.pipeline_id)
        return handle

    async def _cleanup(self, pid: str) -> None:
        try:
            await self.backend.stop_pipeline(pid)
        except Exception:  # it may never have existed in the backend
            log.debug("cleanup of %s: nothing to stop", pid)

    async def start(
        self,
        video_reference: str,
        name: str,
        model_id: str | None = None,
        workflow_spec: dict | None = None,
        workspace_name: str | None = None,
        workflow_id: str | None = None,
        max_fps: float | None = None,
        parameters: dict | None = None,
    ) -> PipelineHandle:
        """Start a pipeline; BackendError (one line) if the name is taken, the spec is invalid or the source fails."""
        if workflow_id and not workspace_name:
            raise BackendError("workflow_id needs workspace_name too (the Roboflow workspace that owns it).")
        async with self._start_lock:
            cfg = PipelineConfig(
                self._new_id(), self._unique_name(name), str(video_reference), model_id, workflow_spec,
                workspace_name, workflow_id, max_fps, parameters,
            )
            handle = await self._launch(cfg)
            cfg.started_at = handle.started_at
            with self._lock:
                if handle.status != "error":  # a source that failed at once is reported, not retried at restart
                    self._configs[cfg.pipeline_id] = cfg
                self._frames[cfg.pipeline_id] = 0
            handle = self._set(handle.with_(name=cfg.name))
            self._save()
        log.info("pipeline %s (%s) started on %s", cfg.name, cfg.pipeline_id, handle.video_reference)
        return handle

    async def restore(self) -> list[PipelineHandle]:
        """Bring back every pipeline saved in active_state.json; failures become status 'error' with the reason.

        One the inference server still runs (the bot died without close()) is adopted, not started a second time.
        """
        restored = []
        for cfg in load_state(self.state_path):
            if cfg.pipeline_id in self._handles:
                continue
            try:
                handle = await self._adopt(cfg) or await self._launch(cfg)
            except Exception as exc:  # a dead camera must not stop the others from coming back
                reason = str(exc) if isinstance(exc, BackendError) else f"{type(exc).__name__}: {exc}"
                log.warning("pipeline %s could not be restored: %s", cfg.name, redact(reason))
                handle = PipelineHandle(
                    cfg.pipeline_id, cfg.name, self.backend.name, cfg.video_reference,
                    cfg.model_id or cfg.workflow_id or "workflow", cfg.started_at or 0.0, "error", error=redact(reason),
                )
            with self._lock:
                self._configs[cfg.pipeline_id] = cfg
                self._frames.setdefault(cfg.pipeline_id, 0)
            restored.append(self._set(handle.with_(name=cfg.name)))
        self._save()
        return restored

    async def _control(self, name_or_id: str, action: str) -> PipelineHandle:
        pid = self.resolve(name_or_id).pipeline_id
        current = self._handles[pid]
        if action == "stop" and current.status not in LIVE:
            handle = current.with_(status="stopped")
            await self._cleanup(pid)
        else:
            if action != "stop" and current.status not in LIVE:
                raise BackendError(f"pipeline {current.name!r} is {current.status}; start it again instead.")
            handle = await getattr(self.backend, f"{action}_pipeline")(pid)
        with self._lock:
            if action in ("pause", "resume") and pid in self._configs:
                self._configs[pid].paused = action == "pause"
        handle = self._set(handle.with_(name=current.name))
        self._save()
        return handle

    async def stop(self, name_or_id: str) -> PipelineHandle:
        """Stop a pipeline; it is dropped from active_state.json so it stays stopped after a restart."""
        return await self._control(name_or_id, "stop")

    async def pause(self, name_or_id: str) -> PipelineHandle:
        return await self._control(name_or_id, "pause")

    async def resume(self, name_or_id: str) -> PipelineHandle:
        return await self._control(name_or_id, "resume")

    async def stop_all(self) -> list[PipelineHandle]:
        """Stop every live pipeline (user action: none of them comes back after a restart)."""
        return [await self.stop(h.pipeline_id) for h in self.snapshot() if h.status in LIVE or h.status == "error"]

    # results ------------------------------------------------------------
    async def results(self, name_or_id: str, max_results: int = 5) -> list[InferenceResult]:
        return await self.backend.consume_results(self.resolve(name_or_id).pipeline_id, max_results)

    def latest(self, name_or_id: str) -> InferenceResult | None:
        return self.backend.latest_result(self.resolve(name_or_id).pipeline_id)

    async def close(self) -> None:
        """Shut down: pipelines stop but stay in active_state.json, so the next start-up restores them."""
        if self._backend is None:
            return
        for h in self.snapshot():
            if h.status in LIVE:
                await self._cleanup(h.pipeline_id)
        await self._backend.close()
        self._backend = None

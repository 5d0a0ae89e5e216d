"""PipelineManager: starts, controls and stops pipelines on the backend (bringing saved ones back: restore.py)."""

from __future__ import annotations

import asyncio
import builtins  # the manager has a `list` method; annotations below mean the builtin
import logging
from collections.abc import Callable
from pathlib import Path

from bot.backends.base import (
    LIVE,
    AdoptingBackend,
    BackendError,
    InferenceBackend,
    InferenceResult,
    PipelineHandle,
)
from bot.backends.orientation import oriented
from bot.backends.provider import BackendProvider
from bot.backends.workflows import detection_workflow, spec_steps
from bot.config import Settings
from bot.media.redaction import redact
from bot.media.sniff import STILL_HINT, still_image
from bot.media.sources import is_live
from bot.objects.caps import cap_refusal
from bot.objects.owner import Owner
from bot.pipelines.backend_choice import BackendChoice
from bot.pipelines.clips import ClipRecorder
from bot.pipelines.request import StartRequest
from bot.pipelines.state import PipelineConfig, PipelineNotFound
from bot.pipelines.table import PipelineTable
from bot.pipelines.tally import Ended, Origin, Tallies, Tally

__all__ = ["LIVE", "PipelineConfig", "PipelineManager", "PipelineNotFound"]
log = logging.getLogger(__name__)

class PipelineManager(PipelineTable):
    """All pipelines of this process, over one backend created on first use (the table itself: bot/pipelines/table.py)."""

    def __init__(
        self, backend: BackendProvider | Callable[[], InferenceBackend], state_path: Path, settings: Settings,
        *, persist: bool = True,
    ) -> None:
        # the process's one lazy backend; a bare factory (tests) gets a provider of its own
        super().__init__(state_path, persist)  # persist=False: a one-shot's pipelines are never saved
        self.provider = backend if isinstance(backend, BackendProvider) else BackendProvider(backend)
        self.backends = BackendChoice(self.provider, settings)  # a pipeline started with backend= runs on another
        self.settings = settings
        self._start_lock = asyncio.Lock()
        # Recent frames of every pipeline, for alert clips; listening first, so an event's frame is already kept
        self.clips = ClipRecorder(settings.clips, settings.workspace / "clips")
        self.add_result_listener(self.clips.on_result)
        self.tallies = Tallies()  # what each pipeline counted so far: status lines and the line when a file ends
        self.add_result_listener(self.tallies.on_result)
        self.add_result_listener(self._follow)  # a pipeline its server lost runs on another one: saved there
        self._origins: dict[str, Origin] = {}
        self._starting: dict[str, asyncio.Task[PipelineHandle]] = {}  # `begin` starts still under way
        self._end_listeners: builtins.list[Callable[[Ended], None]] = []

    # backend ------------------------------------------------------------
    @property
    def backend(self) -> InferenceBackend:
        return self.provider.get()

    async def list(self) -> builtins.list[PipelineHandle]:
        """All pipelines, statuses refreshed from the backend."""
        for handle in self.snapshot():
            if handle.status in LIVE and not self.waiting(handle.pipeline_id):
                await self._refresh(handle.pipeline_id)
        return self.snapshot()

    @property
    def backend_name(self) -> str:
        return self.provider.get().name if self.provider.built else self.settings.inference.backend

    async def status(self, name_or_id: str) -> PipelineHandle:
        """One pipeline, its status refreshed from the backend."""
        handle = self.resolve(name_or_id)
        if handle.status in LIVE and not self.waiting(handle.pipeline_id):
            await self._refresh(handle.pipeline_id)
        return self.resolve(handle.pipeline_id)

    def config(self, name_or_id: str) -> PipelineConfig:
        return self._configs[self.resolve(name_or_id).pipeline_id]

    def runs_step(self, camera: str, step: str) -> bool:
        """Whether a live pipeline on `camera` runs a step whose type names `step` ('line_counter', 'time_in_zone');
        False too for a saved workflow's (its steps are not known here)."""
        for h in self.snapshot():
            cfg = self._configs.get(h.pipeline_id)
            if h.name != camera or h.status not in LIVE or cfg is None or cfg.workflow_spec is None:
                continue
            if any(step in kind for _, kind in spec_steps(cfg.workflow_spec)):
                return True
        return False

    def tally(self, pipeline_id: str) -> Tally | None:
        """What the pipeline counted so far (line in/out, zone dwell); None when it counts nothing."""
        return self.tallies.get(pipeline_id)

    def add_end_listener(self, fn: Callable[[Ended], None]) -> None:
        """fn(ended) once for each pipeline whose video file runs out, on the event loop (it must not block)."""
        self._end_listeners.append(fn)

    async def _refresh(self, pid: str) -> PipelineHandle:
        try:
            fresh = await self.backends.of(pid).get_pipeline_status(pid)
        except BackendError as exc:
            fresh = self._handles[pid].with_(status="error", error=str(exc))
        before = self._handles[pid].status  # read and set with no await between: one refresh sees the change
        handle = self._set(fresh.with_(name=self._handles[pid].name))
        if handle.status == "finished":
            self._save()  # a finished file must not replay on the next start-up
            if before in LIVE and not is_live(handle.video_reference):  # a stream that ends is a health alert
                self._announce_end(handle)
        return handle

    def _announce_end(self, handle: PipelineHandle) -> None:
        handle = self.resolve(handle.pipeline_id)  # with the frames the table counted
        ended = Ended(handle, self.tally(handle.pipeline_id), self._origins.get(handle.pipeline_id))
        log.info("%s", ended.line())
        for fn in list(self._end_listeners):
            try:
                fn(ended)
            except Exception:  # one broken listener must not keep the line from the others
                log.exception("pipeline end listener failed")

    # lifecycle ----------------------------------------------------------
    @staticmethod
    def spec_of(cfg: PipelineConfig) -> dict | None:
        """The spec a pipeline runs: a model id becomes a detection workflow; None for a saved workflow. A turned
        camera's frames are turned upright before any step reads them (bot/backends/orientation.py)."""
        if cfg.workflow_spec is None and cfg.workflow_id is None:
            if not cfg.model_id:
                raise BackendError("give model_id (e.g. 'builtin/people'), a workflow_spec, or workspace_name + workflow_id.")
            return oriented(detection_workflow(cfg.model_id), cfg.orientation())
        return None if cfg.workflow_spec is None else oriented(cfg.workflow_spec, cfg.orientation())

    async def _workflow_for(self, cfg: PipelineConfig) -> dict | None:
        """The spec to deploy; an inline spec is validated first by the backend (its block policy, then its compiler).

        An early answer the model can act on, not the enforcement point: every backend applies the policy itself
        where its start_pipeline / run_single / adopt_pipeline resolve a spec, whoever calls them. The direct backend
        remembers the exact spec it validated here, so a start from an inline spec is checked and compiled once
        (tests/bot/backends/test_direct_checks.py).
        """
        spec = self.spec_of(cfg)
        if cfg.workflow_spec is None or spec is None:
            return spec
        problems = list(await self.backends.named(cfg.backend).validate_workflow(spec) or [])
        if problems:
            raise BackendError("workflow_spec is invalid: " + "; ".join(problems[:5]) + ". Fix the spec and try again.")
        return spec

    async def launch(self, cfg: PipelineConfig) -> PipelineHandle:
        # Every start and every restore passes here: a picture as a "stream" would be reopened for ever.
        if still_image(cfg.video_reference):
            raise BackendError(f"{redact(cfg.video_reference)} {STILL_HINT}.")
        spec = await self._workflow_for(cfg)
        self.backends.assign(cfg.pipeline_id, cfg.backend)
        backend = self.backends.of(cfg.pipeline_id)
        try:
            handle = await backend.start_pipeline(
                cfg.pipeline_id, cfg.name, cfg.video_reference, ref=cfg.workflow(spec), max_fps=cfg.max_fps,
                parameters=cfg.parameters, on_result=self.on_result,
            )
        except BaseException:
            await self._cleanup(cfg.pipeline_id)  # nothing half-started is left behind
            raise
        self._place(cfg)
        if cfg.paused and handle.status in LIVE:
            handle = await backend.pause_pipeline(cfg.pipeline_id)
        return handle

    def _place(self, cfg: PipelineConfig) -> bool:
        """Record which server runs it (an inference server's pipelines outlive us); True if that changed."""
        backend = self.backends.of(cfg.pipeline_id)
        where: tuple[str | None, str | None, dict | None] = (None, None, None)
        if isinstance(backend, AdoptingBackend):
            pid = cfg.pipeline_id
            where = (backend.server_id(pid), backend.server_of(pid), backend.carried(pid) or None)
        changed = where != (cfg.server_id, cfg.server, cfg.carried)
        cfg.server_id, cfg.server, cfg.carried = where
        return changed

    def _follow(self, handle: PipelineHandle, result: InferenceResult) -> None:
        """After a pipeline moved to another server (bot/backends/http/failover.py), save where it runs now."""
        with self._lock:
            cfg = self._configs.get(handle.pipeline_id)
        if cfg is not None and cfg.server_id and self._place(cfg):
            self._save()

    async def _cleanup(self, pid: str) -> None:
        try:
            await self.backends.of(pid).stop_pipeline(pid)
        except Exception:  # it may never have existed in the backend
            log.debug("cleanup of %s: nothing to stop", pid)

    async def start(self, req: StartRequest) -> PipelineHandle:
        """Start `req` as given; BackendError (one line) if the name is taken, the spec is invalid or the source fails.

        Its source is opened as is and a line or zone must already be in its spec: `bot.pipelines.start.start`
        checks and resolves a request from a user or the model, then calls this.
        """
        self._check(req)
        await self.provider.aget()  # built off the event loop on first use
        async with self._start_lock:  # counted and started under one lock: 60 concurrent starts cannot all pass
            cfg = self._config_for(req)
            handle = self._started(cfg, await self.launch(cfg), req)
        log.info("pipeline %s (%s) started on %s", cfg.name, cfg.pipeline_id, handle.video_reference)
        return handle

    async def begin(self, req: StartRequest) -> PipelineHandle:
        """`start`, answered at once: the pipeline is named, counted and listed as `starting` now, and goes to
        `running` or `error` (with the reason) in the background, where loading the detector and opening the source
        take their seconds (`POST /api/pipelines`). BackendError for what is refused before anything opens."""
        self._check(req)
        async with self._start_lock:  # counted under the lock, as `start`: the placeholder holds its place
            cfg = self._config_for(req)
            handle = self.adopt_config(cfg, self.placeholder(cfg, "starting"), waiting=True)
        task = asyncio.create_task(self._start_later(cfg, req), name=f"start-{cfg.pipeline_id}")
        self._starting[cfg.pipeline_id] = task
        task.add_done_callback(lambda t: self._starting.pop(cfg.pipeline_id, None))
        return handle

    async def started(self, name_or_id: str) -> PipelineHandle:
        """The pipeline once a `begin` under way has ended (running, or error), else as it is now."""
        pid = self.resolve(name_or_id).pipeline_id
        task = self._starting.get(pid)
        if task is not None:
            await asyncio.shield(task)
        return self.resolve(pid)

    async def _start_later(self, cfg: PipelineConfig, req: StartRequest) -> PipelineHandle:
        try:
            await self.provider.aget()
            async with self._start_lock:
                if not self.wants_restore(cfg.pipeline_id):  # stopped while it waited: nothing is opened
                    return self.resolve(cfg.pipeline_id)
                handle = await self.launch(cfg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the backend would not build, the spec failed, the source would not open
            why = str(exc) if isinstance(exc, BackendError) else f"{type(exc).__name__}: {exc}"
            handle = self.placeholder(cfg, "error", redact(why))
        if not self.wants_restore(cfg.pipeline_id):  # stopped while it was being opened: closed again
            await self._cleanup(cfg.pipeline_id)
            return self.resolve(cfg.pipeline_id)
        handle = self._started(cfg, handle, req)
        log.info("pipeline %s (%s) %s on %s", cfg.name, cfg.pipeline_id,
                 "started" if handle.status != "error" else f"failed: {handle.error}", handle.video_reference)
        return handle

    def _check(self, req: StartRequest) -> None:
        """What the manager refuses before anything is counted or opened (BackendError)."""
        if req.line is not None or req.zone is not None or req.anchor is not None:
            raise BackendError("line=, zone= and anchor= are composed into the spec by bot.pipelines.start.start")
        self.backends.check(req.backend)
        if req.workflow_id and not req.workspace_name:
            raise BackendError("workflow_id needs workspace_name too (the Roboflow workspace that owns it).")

    def _config_for(self, req: StartRequest) -> PipelineConfig:  # holding self._start_lock
        """The new pipeline's record: an id, a name nobody else holds, counted against its owner's share."""
        if why := self.cap_refusal(req.owner):
            raise BackendError(why)
        return PipelineConfig(
            self._new_id(), self._unique_name(req.name or "", req.owner), str(req.source), req.model_id,
            req.workflow_spec, req.workspace_name, req.workflow_id, req.max_fps, req.parameters,
            backend=self.backends.check(req.backend), owner=req.owner, owner_channel=req.owner_channel,
            owner_place=req.owner_place, rotate=req.rotate or None, flip=req.flip if req.flip in ("h", "v") else None,
        )

    def _started(self, cfg: PipelineConfig, handle: PipelineHandle, req: StartRequest) -> PipelineHandle:
        """Record a launched pipeline; one whose source failed at once is listed, not kept to start again."""
        cfg.started_at = handle.started_at
        with self._lock:
            if handle.status != "error":
                self._configs[cfg.pipeline_id] = cfg
            else:
                self._configs.pop(cfg.pipeline_id, None)
            self._restoring.discard(cfg.pipeline_id)
            self._frames.setdefault(cfg.pipeline_id, 0)
        handle = self._set(handle.with_(name=cfg.name))
        if req.origin is not None:
            self._origins[cfg.pipeline_id] = req.origin
        self._save()
        return handle

    def cap_refusal(self, owner: str | None) -> str | None:
        """Why `owner` (None: the operator) may not start one more pipeline now (settings `pipelines`), or None."""
        with self._lock:
            owners = [cfg.owner for pid, cfg in self._configs.items()
                      if pid in self._handles and self._handles[pid].status in LIVE]
        return cap_refusal(self.settings, "pipeline", owners, owner)

    async def _control(self, name_or_id: str, action: str) -> PipelineHandle:
        pid = self.resolve(name_or_id).pipeline_id
        current = self._handles[pid]
        if action != "stop" and self.waiting(pid):
            raise BackendError(f"pipeline {current.name!r} is still being restored; try again in a moment.")
        if action == "stop" and (current.status not in LIVE or self.waiting(pid)):
            handle = current.with_(status="stopped")
            await self._cleanup(pid)
        else:
            if action != "stop" and current.status not in LIVE:
                raise BackendError(f"pipeline {current.name!r} is {current.status}; start it again instead.")
            handle = await getattr(self.backends.of(pid), f"{action}_pipeline")(pid)
        with self._lock:
            if action in ("pause", "resume") and pid in self._configs:
                self._configs[pid].paused = action == "pause"
        handle = self._set(handle.with_(name=current.name))
        self._save()
        return handle

    def owner(self, name_or_id: str) -> Owner:
        """Who started a pipeline and where (the operator for one restored from before owners were kept)."""
        pid = self.resolve(name_or_id).pipeline_id  # before the lock: resolve takes it too
        with self._lock:
            cfg = self._configs.get(pid)
        return cfg.made_by() if cfg is not None else Owner()

    async def stop(self, name_or_id: str) -> PipelineHandle:
        """Stop a pipeline; it is dropped from active_state.json so it stays stopped after a restart."""
        return await self._control(name_or_id, "stop")

    async def pause(self, name_or_id: str) -> PipelineHandle:
        return await self._control(name_or_id, "pause")

    async def resume(self, name_or_id: str) -> PipelineHandle:
        return await self._control(name_or_id, "resume")

    async def stop_all(self) -> builtins.list[PipelineHandle]:
        """Stop every live pipeline (user action: none of them comes back after a restart)."""
        return [await self.stop(h.pipeline_id) for h in self.snapshot() if h.status in LIVE or h.status == "error"]

    async def control_all(self, verb: str) -> builtins.list[PipelineHandle]:
        """stop / pause / resume every pipeline it applies to: `/vision stop all` and the tools' `all`."""
        if verb == "stop":
            return await self.stop_all()
        return [await getattr(self, verb)(h.pipeline_id) for h in self.snapshot() if h.status in LIVE]

    # results ------------------------------------------------------------
    async def results(self, name_or_id: str, max_results: int = 5) -> builtins.list[InferenceResult]:
        pid = self.resolve(name_or_id).pipeline_id
        return await self.backends.of(pid).consume_results(pid, max_results)  # the backend it runs on, as latest()

    def latest(self, name_or_id: str) -> InferenceResult | None:
        pid = self.resolve(name_or_id).pipeline_id
        return self.backends.of(pid).latest_result(pid)  # a pipeline started with backend= runs on another

    async def close(self) -> None:
        """Shut down: pipelines stop but stay in active_state.json, so the next start-up restores them."""
        for task in list(self._starting.values()):  # a start under way opens nothing after the shutdown
            task.cancel()
        if self._starting:
            await asyncio.gather(*self._starting.values(), return_exceptions=True)
        if not self.provider.built and not self.backends.built:
            return
        for h in self.snapshot():
            if h.status in LIVE:
                await self._cleanup(h.pipeline_id)
        await self.provider.close()
        await self.backends.close()

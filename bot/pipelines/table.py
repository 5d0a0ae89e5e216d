"""The table of this process's pipelines: handles, saved configs, frame counts, lookups, result fan-out, saving."""

from __future__ import annotations

import builtins  # PipelineManager has a `list` method; annotations in this class hierarchy mean the builtin
import logging
import secrets
import threading
from pathlib import Path

from bot.backends.base import LIVE, BackendError, InferenceResult, PipelineHandle, ResultListener
from bot.media.redaction import redact
from bot.pipelines.owners import save_mine
from bot.pipelines.state import PipelineConfig, PipelineNotFound

log = logging.getLogger(__name__)
LIST_HINT = "Use list_pipelines or start one."  # a `/vision` answer says it in commands (bot/commands/dispatch.py)

class PipelineTable:
    """What the manager knows about its pipelines; thread-safe (results arrive on pipeline threads)."""

    @property
    def backend_name(self) -> str:
        """Shown on placeholder handles; the manager names its backend."""
        return ""

    def __init__(self, state_path: Path, persist: bool = True) -> None:
        self.state_path = Path(state_path)
        self.persist = persist  # False: a one-shot command's pipelines die with it and are never saved
        self._handles: dict[str, PipelineHandle] = {}
        self._configs: dict[str, PipelineConfig] = {}
        self._frames: dict[str, int] = {}
        self._listeners: list[ResultListener] = []
        self._restoring: set[str] = set()  # saved pipelines listed as `starting` before the backend has them
        self._lock = threading.Lock()  # guards handles/frames: results arrive on pipeline threads

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
        raise PipelineNotFound(f"no pipeline {key!r}; known pipelines: {known}. {LIST_HINT}")

    def snapshot(self) -> builtins.list[PipelineHandle]:
        """The handles as last seen, without asking the backend (safe from any thread)."""
        with self._lock:
            return [h.with_(frames=max(h.frames, self._frames.get(h.pipeline_id, 0))) for h in self._handles.values()]

    # listeners ----------------------------------------------------------
    def add_result_listener(self, fn: ResultListener) -> None:
        """fn(handle, result) for every result of every pipeline, called on the producing thread."""
        self._listeners.append(fn)

    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
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
        # the error too: decoders name the URL they failed on, and REST returns the handle's fields as they are
        handle = handle.with_(video_reference=redact(handle.video_reference),
                              error=redact(handle.error) if handle.error else handle.error)
        with self._lock:
            self._handles[handle.pipeline_id] = handle
        return handle

    def _save(self) -> None:
        if not self.persist:
            return
        with self._lock:
            # live and failed ones come back on restart; stopped (by the user) and finished ones do not
            keep = [c for pid, c in self._configs.items() if pid in self._handles and self._handles[pid].status in (*LIVE, "error")]
        save_mine(self.state_path, keep)  # merged: another process's saved pipelines stay

    def kept_by_others(self, owner: str | None) -> set[str]:
        """Names of pipelines that are down but kept to start again (`error`), whose owner is not `owner`: still
        theirs, so nobody else's new pipeline may take the name (and with it their rules and routes)."""
        with self._lock:
            return {h.name.lower() for pid, h in self._handles.items() if h.status == "error" and pid in self._configs
                    and self._configs[pid].owner != owner}

    def _unique_name(self, name: str, owner: str | None = None) -> str:
        name = (name or "").strip()
        if not name:
            raise BackendError("a pipeline needs a name, e.g. the camera name.")
        others = self.kept_by_others(owner)
        for h in self.snapshot():
            if h.name.lower() == name.lower() and (h.status in LIVE or h.name.lower() in others):
                raise BackendError(f"a pipeline named {name!r} is already {h.status} (id {h.pipeline_id}); stop it "
                                   "or pick another name.")
        return name

    def _new_id(self) -> str:
        while True:
            pid = f"pipe_{secrets.token_hex(3)}"
            if pid not in self._handles:
                return pid

    def waiting(self, pid: str) -> bool:
        """Listed from active_state.json, not yet started in the backend."""
        with self._lock:
            return pid in self._restoring

    def knows(self, pid: str) -> bool:
        with self._lock:
            return pid in self._handles

    def wants_restore(self, pid: str) -> bool:
        """Still to be brought back: the user has not stopped or replaced it meanwhile."""
        with self._lock:
            h = self._handles.get(pid)
            return pid in self._configs and h is not None and h.status in ("starting", "error")

    def placeholder(self, cfg: PipelineConfig, status: str, error: str | None = None) -> PipelineHandle:
        """A handle for a saved pipeline that is not (yet) running."""
        what = cfg.model_id or cfg.workflow_id or "workflow"
        return PipelineHandle(cfg.pipeline_id, cfg.name, self.backend_name, cfg.video_reference, what, cfg.started_at or 0.0,
                              status, error=error)

    def adopt_config(self, cfg: PipelineConfig, handle: PipelineHandle, waiting: bool = False) -> PipelineHandle:
        """Track a restored pipeline (config kept in active_state.json while live or failed) and save.

        `waiting`: listed, but not in the backend yet (nothing asks the backend about it).
        """
        with self._lock:
            (self._restoring.add if waiting else self._restoring.discard)(cfg.pipeline_id)
            self._configs[cfg.pipeline_id] = cfg
            self._frames.setdefault(cfg.pipeline_id, 0)
        handle = self._set(handle.with_(name=cfg.name))
        self._save()
        return handle


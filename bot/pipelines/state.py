"""Pipeline records and active_state.json (the pipelines to start again after a restart, written atomically)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from bot.backends.base import WorkflowRef

log = logging.getLogger(__name__)

VERSION = 1


class PipelineNotFound(KeyError):
    """No pipeline with that id or name; str() lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "pipeline not found"


@dataclass
class PipelineConfig:
    """What is needed to start a pipeline again after a restart (video_reference unredacted: it stays on disk)."""

    pipeline_id: str
    name: str
    video_reference: str
    model_id: str | None = None
    workflow_spec: dict | None = None
    workspace_name: str | None = None
    workflow_id: str | None = None
    max_fps: float | None = None
    parameters: dict | None = None
    paused: bool = False
    started_at: float | None = None
    server_id: str | None = None  # the inference server's own id (http backend): adopted again after a crash
    restore_failures: int = 0  # consecutive start-ups whose restore failed (bot/pipelines/restore.py gives up)
    backend: str | None = None  # started with backend= on another backend than the configured one

    def workflow(self, spec: dict | None) -> WorkflowRef:
        """What the backend runs: `spec` (PipelineManager.spec_of: the model wrapped, or the inline spec), or the
        saved workflow when spec is None."""
        return WorkflowRef(workflow_spec=spec, workspace_name=self.workspace_name, workflow_id=self.workflow_id)


def save_state(path: Path, configs: list[PipelineConfig]) -> None:
    """Write the configs; owner-only permissions because stream URLs may carry camera passwords."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": VERSION, "pipelines": [dataclasses.asdict(c) for c in configs]}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_state(path: Path) -> list[PipelineConfig]:
    """The saved configs; a missing file is empty, a corrupt one is logged and ignored (never fatal)."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = {f.name for f in dataclasses.fields(PipelineConfig)}
        return [PipelineConfig(**{k: v for k, v in p.items() if k in fields}) for p in data.get("pipelines", [])]
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("%s is unreadable (%s); no pipelines restored", path, type(exc).__name__)
        return []

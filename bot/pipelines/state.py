"""Pipeline records and active_state.json (the pipelines to start again after a restart, written atomically)."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from bot.backends.base import WorkflowRef
from workspace.atomic import read_state, write_atomic

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
    server: str | None = None  # the URL of the inference server that runs it (several servers: it may move)
    carried: dict | None = None  # line totals counted on servers it left (failover): added onto its server's own
    restore_failures: int = 0  # consecutive start-ups whose restore failed (bot/pipelines/restore.py gives up)
    backend: str | None = None  # started with backend= on another backend than the configured one
    owner: str | None = None  # the Slack user who started it (None: the operator): bot/pipelines/caps.py
    process: str | None = None  # `pid:start` of the process running it (bot/pipelines/owners.py)

    def workflow(self, spec: dict | None) -> WorkflowRef:
        """What the backend runs: `spec` (PipelineManager.spec_of: the model wrapped, or the inline spec), or the
        saved workflow when spec is None."""
        return WorkflowRef(workflow_spec=spec, workspace_name=self.workspace_name, workflow_id=self.workflow_id)


def save_state(path: Path, configs: list[PipelineConfig]) -> None:
    """Write the configs atomically (the last version kept as .bak); owner-only permissions (mkstemp's 0600) because
    stream URLs may carry camera passwords."""
    data = {"version": VERSION, "pipelines": [dataclasses.asdict(c) for c in configs]}
    write_atomic(path, json.dumps(data, indent=2, default=str), keep_previous=True)


def load_state(path: Path) -> list[PipelineConfig]:
    """The saved configs; a missing file is empty; a damaged one is kept aside (one log line) and its last good copy
    used; a record that does not fit is skipped with a line, the others still come back."""
    data = read_state(path, dict, log)[0] or {}
    fields = {f.name for f in dataclasses.fields(PipelineConfig)}
    out = []
    for p in data.get("pipelines") or []:
        try:
            out.append(PipelineConfig(**{k: v for k, v in p.items() if k in fields}))
        except (TypeError, AttributeError) as exc:
            log.warning("%s: a saved pipeline is unreadable (%s); skipped", path.name, type(exc).__name__)
    return out

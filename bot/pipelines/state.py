"""Pipeline records and active_state.json (the pipelines to start again after a restart, written atomically)."""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from bot.backends.base import WorkflowRef
from bot.backends.orientation import Orientation
from bot.objects.owner import Owner
from bot.objects.text import check_name, name_from
from bot.storage import records
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
    owner: str | None = None  # the Slack user who started it (None: the operator): bot/objects/caps.py
    owner_channel: str | None = None  # where they started it (its audience)
    owner_place: str = "operator"  # dm / public / private / operator (bot/objects/owner.py)
    process: str | None = None  # `pid:start` of the process running it (bot/pipelines/owners.py)
    rotate: int | None = None  # a turned camera's frames are turned upright (bot/backends/orientation.py)
    flip: str | None = None  # and mirrored: "h" / "v" ("none" or None: not)

    def made_by(self) -> Owner:
        """Its owner: who started it and where (bot/objects/owner.py), for who may stop, pause or resume it."""
        return Owner.model_validate({"user": self.owner, "channel": self.owner_channel, "place": self.owner_place}) \
            if self.owner else Owner()

    def orientation(self) -> Orientation:
        """How its frames are turned upright (saved with it: a restart turns them again)."""
        return Orientation.of(self.rotate, self.flip)

    def workflow(self, spec: dict | None) -> WorkflowRef:
        """What the backend runs: `spec` (PipelineManager.spec_of: the model wrapped, or the inline spec), or the
        saved workflow when spec is None."""
        return WorkflowRef(workflow_spec=spec, workspace_name=self.workspace_name, workflow_id=self.workflow_id)




def save_state(path: Path, configs: list[PipelineConfig]) -> None:
    """Write the configs atomically (the last version kept as .bak); owner-only permissions (mkstemp's 0600) because
    stream URLs may carry camera passwords."""
    data = {"version": VERSION, "pipelines": [dataclasses.asdict(c) for c in configs]}
    write_atomic(path, json.dumps(data, indent=2, default=str), keep_copy=True)


def load_state(path: Path) -> list[PipelineConfig]:
    """The saved configs; a missing file is empty; a damaged one is kept aside (one log line) and its last good copy
    used; a record that does not fit is skipped with a line, the others still come back."""
    # A list of pipelines, or the file is damaged (a number there failed restore at start-up).
    data, note = read_state(path, dict, log, fits=lambda d: isinstance(d.get("pipelines", []), list))
    if note:
        records.note(note)
    out, bad = [], []
    for p in (data or {}).get("pipelines") or []:
        try:
            out.append(_config(p))
        except (TypeError, AttributeError, ValueError) as exc:
            bad.append((p, f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"))
    if bad:  # kept beside the file, said once; the next save leaves them out of it
        records.keep(path, "pipelines", bad)
    return out


def _config(p: dict) -> PipelineConfig:
    """A saved pipeline, checked: its fields' types, and a name people and the model may see (a name saved before
    names were bounded is made one, said)."""
    cfg = records.typed(PipelineConfig, p)  # every field of its type (a failure count that is text stops no restore)
    if not cfg.video_reference or cfg.restore_failures < 0:
        raise ValueError("a saved pipeline needs a source")
    try:
        check_name(cfg.name)
    except ValueError:
        safe = name_from(cfg.name, "pipeline")
        records.note(f"a saved pipeline's name was outside the names people may give ({cfg.name[:40]!r}…); "
                     f"it runs as {safe!r}")
        cfg.name = safe
    cfg.made_by()  # its owner's fields, as an owner (ValueError for another shape)
    if cfg.flip == "none":
        cfg.flip = None
    cfg.orientation()  # a turn that is a setting (ValueError for rotate=45: kept aside, the others restored)
    return cfg

"""What a heartbeat shows the model: its user message (tier-1 news, pipelines, due checklist items) and its frames."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from bot.agent.quoting import quote_data
from bot.backends.base import InferenceResult
from bot.monitoring.news import MonitorEvent
from bot.objects.text import untrusted
from bot.pipelines.readiness import of_handles, summary
from bot.pipelines.status import status_line
from bot.scheduling.heartbeat.checklist import ChecklistItem

if TYPE_CHECKING:
    from bot.pipelines.manager import PipelineManager

MAX_FRAMES = 4


def compose(now: datetime, tz: ZoneInfo, events: list[MonitorEvent], due: list[ChecklistItem],
            pipelines: PipelineManager | None, registered: Mapping[str, str] | None = None) -> str:
    """The heartbeat's user message: new tier-1 events, pipelines, which cameras can count (the `/vision cameras`
    summary over `registered`, CAMERAS.md's cameras), due checklist items."""
    lines = [f"Heartbeat at {now:%Y-%m-%d %H:%M} ({tz.key})."]
    if events:
        lines.append("\nNew since the last heartbeat (tier-1 events, already alerted where not muted):")
        news = []
        for e in events:
            when = datetime.fromtimestamp(e.time, tz)
            counts = ", ".join(f"{k}={v}" for k, v in e.counts.items())
            news.append(f"- {when:%H:%M:%S} {e.camera} [{e.rule}] {e.text}" + (f" ({counts})" if counts else ""))
        # Event texts carry what models and cameras produced (class names, captions): data, never instructions.
        lines.append(quote_data("tier-1 events", "\n".join(news)))
    else:
        lines.append("\nNo new tier-1 events since the last heartbeat.")
    lines.append("\nPipelines:")
    running = _pipeline_lines(pipelines)
    # their names and errors were written by people and sources: quoted as data (bot/objects/text.py)
    lines.append(untrusted("pipelines", "\n".join(running)) if running else "- none running")
    if pipelines is not None or registered:
        ready = of_handles(pipelines, pipelines.snapshot() if pipelines is not None else [], registered or {})
        lines.append("\nCameras (can they count):")
        lines.append(untrusted("cameras", summary(ready)))
    if due:
        lines.append("\nChecklist items due now:")
        lines += [f"- {i.text}" for i in due]
    lines.append(
        "\nReply HEARTBEAT_OK if nothing needs a person's attention. Otherwise start with one line that "
        "says what happened and where, then details."
    )
    return "\n".join(lines)


def _pipeline_lines(pipelines: PipelineManager | None) -> list[str]:
    handles = pipelines.snapshot() if pipelines is not None else []
    return ["- " + status_line(h, latest=_latest(pipelines, h.pipeline_id),
                               tally=pipelines.tally(h.pipeline_id) if pipelines is not None else None) for h in handles]


def _latest(pipelines: PipelineManager | None, pid: str) -> InferenceResult | None:
    if pipelines is None:
        return None
    try:
        return pipelines.latest(pid)
    except Exception:  # noqa: BLE001 - a stopped pipeline has no latest result
        return None


def frames(events: list[MonitorEvent], pipelines: PipelineManager | None, checklist_due: bool = False) -> list[bytes]:
    """A frame per camera with news (its event's evidence); for a due checklist item, the running cameras' latest.

    At most MAX_FRAMES: each image costs the model ~1.5k tokens.
    """
    out: dict[str, bytes] = {}
    for e in sorted(events, key=lambda e: -e.time):
        if e.camera not in out:
            latest = _latest(pipelines, e.pipeline_id) if e.pipeline_id else None
            frame = e.frame or (latest.frame if latest is not None else None)
            if frame:
                out[e.camera] = frame
    for h in pipelines.snapshot() if checklist_due and pipelines is not None else []:
        latest = _latest(pipelines, h.pipeline_id) if h.status == "running" else None
        if latest is not None and latest.frame and h.name not in out:
            out[h.name] = latest.frame
    return list(out.values())[:MAX_FRAMES]

"""Pipeline health as tier 1 sees it: the problems each pipeline newly shows (errored, source dropped, stalled, slow,
cannot count reliably, a camera that looks mounted turned, frames over media.max_pixels, its camera's faults, moved
to another inference server), each said once on its way in (frames over the limit once per size the camera sends, a
move once per move; a camera fault also once on its way out: camera_news.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.backends.base import PipelineHandle
from bot.backends.pace import WINDOW as PACE_WINDOW
from bot.media.frame_limit import SAID_SIZES
from bot.monitoring.camera_news import CameraNews
from bot.pipelines.limits import cannot_count, turned
from bot.pipelines.status import health_problems

if TYPE_CHECKING:
    from bot.pipelines.manager import PipelineManager


class PipelineHealth:
    """When each pipeline last gave a result, and which problems it had at the last check."""

    def __init__(self, pipelines: PipelineManager | None, stall_seconds: float, min_fps: float) -> None:
        self.pipelines = pipelines
        self.stall_seconds, self.min_fps = stall_seconds, min_fps
        self._last_result: dict[str, float] = {}
        self._health: dict[str, set[str]] = {}
        self._sizes_said: dict[str, list[str]] = {}  # each pipeline's frames_scaled notes said (SAID_SIZES at most)
        self.camera = CameraNews()  # its camera's faults: each start and end said once
        self._failovers: dict[str, str] = {}  # each pipeline's last move to another inference server, said

    def result_at(self, pipeline_id: str, now: float) -> None:
        """A result arrived (a stalled pipeline is one whose last result is too old)."""
        self._last_result[pipeline_id] = now

    def new_problems(self, h: PipelineHandle, now: float) -> list[tuple[str, str]]:
        """(rule, text) for each problem the pipeline shows now and did not at the last check."""
        last = self._last_result.get(h.pipeline_id, 0.0)
        current = health_problems(h, now, last, self.stall_seconds, self.min_fps)
        values = getattr(self.latest(h), "values", None)
        if h.status == "running" and (note := turned(values)):
            current["camera_turned"] = f"{h.name}: {note}."  # said once, even after a cannot_count line before it
        elif h.status == "running" and (note := cannot_count(values)):
            current["cannot_count"] = f"{h.name}: {note}."  # said once, after the first frames measured the camera
        if h.status == "running" and h.scaled:
            current["frames_scaled"] = f"{h.name}: {h.scaled}."  # the source's frames are scaled at decode
        back = max((f.ended or now for f in h.faults if f.kind == "video"), default=0.0)
        if now - back < self.stall_seconds:  # video lost, or back only now: said as the camera's video_lost
            current.pop("stalled", None)
        if now - back < PACE_WINDOW:  # the last minute's fps still counts the gap: no low_fps note for it
            current.pop("low_fps", None)
        before = self._health.get(h.pipeline_id, set())
        self._health[h.pipeline_id] = set(current)
        new = [(rule, text) for rule, text in current.items()  # only on the way in
               if rule not in before and rule != "frames_scaled"]
        if "frames_scaled" in current and self._first_said(h.pipeline_id, current["frames_scaled"]):
            new.append(("frames_scaled", current["frames_scaled"]))
        if h.failover and self._failovers.get(h.pipeline_id) != h.failover:  # once per move to another server
            self._failovers[h.pipeline_id] = h.failover
            new.append(("server_failover", f"pipeline {h.name} {h.failover}."))
        return new + self.camera.news(h)

    def _first_said(self, pipeline_id: str, note: str) -> bool:
        """Whether a frames_scaled note is new for the pipeline: once per size its camera sends (a camera may raise
        its resolution after it connects, or flip between sizes), SAID_SIZES sizes at most."""
        said = self._sizes_said.setdefault(pipeline_id, [])
        if note in said or len(said) >= SAID_SIZES:
            return False
        said.append(note)
        return True

    def latest(self, h: PipelineHandle) -> Any:
        """The pipeline's latest result, or None."""
        latest = getattr(self.pipelines, "latest", None)
        try:
            return latest(h.pipeline_id) if latest else None
        except Exception:  # noqa: BLE001 - a frame or a limit is a nicety for a health alert
            return None

    def latest_frame(self, h: PipelineHandle) -> bytes | None:
        return getattr(self.latest(h), "frame", None)

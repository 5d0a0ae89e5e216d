"""Which cameras can do their job: one row per camera of CAMERAS.md and per pipeline, from what each pipeline already
measures (its handle: the rate asked and delivered the last minute, its camera's faults; its newest result: the
frame's size, builtin/people's `camera` output, the counting limits of bot/pipelines/limits.py; its clip ring: whether
things move). `/vision cameras`, the camera_readiness tool (and MCP), `GET /api/cameras/readiness`, the status line
and the heartbeat all read it here; Slack shows it as one table block (at most 100 rows of at most 20 cells)."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from bot.backends.base import LIVE, BackendError, InferenceResult, PipelineHandle
from bot.backends.faults.kinds import lasted
from bot.media.motion import moving
from bot.media.redaction import redact
from bot.pipelines.limits import HEAD, cannot_count, small_so_far

COLUMNS = ("Camera", "Pipeline", "State", "Resolution", "FPS asked / delivered", "Person height", "Light", "Motion",
           "Last frame", "Can count")
MAX_ROWS = 99  # Slack's table takes 100 rows: the header and 99
MOTION_SECONDS = 10.0  # the clip ring's last seconds the motion column reads (its first and last frame)
STALE = 10.0  # a newest frame older than this on a running pipeline: its age is the news
NOT_RUNNING = "not running"


@dataclass(frozen=True)
class Readiness:
    """One camera or pipeline's row: each cell a short string ('—' when not measured), and whether it can count."""

    camera: str
    pipeline: str
    state: str
    resolution: str
    fps: str
    person: str
    light: str
    motion: str
    frame_age: str
    can_count: bool | None  # None: not known yet (no result, or not running)
    why: str = ""  # why not, and what to change

    def cells(self) -> list[str]:
        count = {True: "yes", False: "no", None: "not yet"}[self.can_count] + (f" — {self.why}" if self.why else "")
        return [self.camera, self.pipeline, self.state, self.resolution, self.fps, self.person, self.light,
                self.motion, self.frame_age, count]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def short(self) -> str:
        """'dock: no — too dark …' (the status line's and the heartbeat's part)."""
        name = self.camera if self.camera == self.pipeline or self.pipeline == "—" else f"{self.camera}/{self.pipeline}"
        return f"{name}: {self.cells()[-1]}"


class Source:
    """What the rows are read from (the manager and its clip ring), so the table needs no running backend."""

    def __init__(self, handles: list[PipelineHandle], latest: Callable[[str], InferenceResult | None],
                 recent: Callable[[str, float], list[bytes]] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.handles, self.latest, self.recent, self.clock = handles, latest, recent, clock


def _num(values: Mapping[str, Any], key: str) -> float | None:
    v = values.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _camera_part(result: InferenceResult | None) -> Mapping[str, Any]:
    part = result.values.get("camera") if result is not None else None
    return part if isinstance(part, Mapping) else {}


def _resolution(result: InferenceResult | None) -> str:
    if result is None or not result.image_size:
        return "—"
    w, h = result.image_size
    return f"{w}×{h}"


def _fps(h: PipelineHandle) -> str:
    asked = f"{h.asked_fps:g}" if h.asked_fps else "any"
    got = f"{h.fps:.1f}" if h.fps is not None else "—"
    return f"{asked} / {got}" + (" (short)" if h.short else "")


def _person(result: InferenceResult | None) -> str:
    """The people's height in px: builtin/people's measured typical height, else the median box of the newest result's
    people (a Roboflow model's)."""
    typical = _num(_camera_part(result), "person_px")
    if typical is not None:
        return f"{typical:.0f} px"
    boxes = [d.xyxy[3] - d.xyxy[1] for d in (result.detections if result is not None else ()) if d.class_name == "person"]
    return f"{statistics.median(boxes):.0f} px" if boxes else "—"


def _light(h: PipelineHandle, result: InferenceResult | None) -> str:
    """The camera's faults first (black, grey/IR), then builtin/people's light (`poor_light`, `luma`)."""
    on = _open(h)
    if "black" in on:
        return "black or covered"
    part = _camera_part(result)
    poor = part.get("poor_light") if isinstance(part.get("poor_light"), str) else None
    luma = _num(part, "luma")
    words = [w for w in ("grey (IR)" if "grey" in on else None, poor) if w]
    if not words:
        words = ["ok" if luma is not None else "—"]
    return ", ".join(words) + (f" (luma {luma:.0f})" if luma is not None else "")


def _motion(h: PipelineHandle, src: Source) -> str:
    if h.status not in LIVE:
        return "—"
    if "frozen" in _open(h):
        return "frozen"
    frames = src.recent(h.pipeline_id, MOTION_SECONDS) if src.recent is not None else []
    if len(frames) < 2:
        return "—"
    said = moving(frames[0], frames[-1])
    return {True: "moving", False: "still", None: "—"}[said]


def _age(result: InferenceResult | None, now: float) -> str:
    if result is None:
        return "—"
    return lasted(max(0.0, now - result.timestamp))


def _open(h: PipelineHandle) -> set[str]:
    """The kinds of the camera's faults that hold now: none once its pipeline no longer runs (a camera frozen when it
    was stopped is not frozen now: nothing looks at it)."""
    return {f.kind for f in h.faults if f.ended is None} if h.status in LIVE else set()


def _can_count(h: PipelineHandle, result: InferenceResult | None) -> tuple[bool | None, str]:
    """(can it count, why not and what to change): a pipeline that does not run first, then a camera fault (no
    picture, no count), then the limits."""
    if h.status == "error":
        return False, f"the pipeline failed ({h.error or 'unknown error'}): check the source, then restart it"
    if h.status not in LIVE:
        return None, f"the pipeline {h.status}: `/vision start {h.name}` to run it again"
    for f in h.faults:
        if f.ended is None and f.kind in ("video", "frozen", "black"):
            return False, f"{f.text}: {f.about.advice}"
    if result is None:
        return None, "no result yet"
    why = cannot_count(result.values)
    if why:
        return False, why.removeprefix(HEAD)
    if early := small_so_far(result.values):
        return None, early
    return True, ""


def pipeline_row(h: PipelineHandle, camera: str, src: Source) -> Readiness:
    try:
        result = src.latest(h.pipeline_id)
    except LookupError:
        result = None
    state = "reconnecting" if "video" in _open(h) and h.status == "running" else h.status
    can, why = _can_count(h, result)
    return Readiness(camera, h.name, state, _resolution(result), _fps(h), _person(result), _light(h, result),
                     _motion(h, src), _age(result, src.clock()), can, why)


def camera_row(name: str) -> Readiness:
    """A registered camera no pipeline runs on."""
    return Readiness(name, "—", NOT_RUNNING, "—", "—", "—", "—", "—", "—", None,
                     f"start it: `/vision start {name}`")


def rows(registered: Mapping[str, str], src: Source, names_of: Callable[[PipelineHandle], str | None],
         only: str | None = None) -> list[Readiness]:
    """Every registered camera (with each pipeline that runs on it, else one 'not running' row), then every other
    pipeline; ended pipelines only when their camera has no live one. `only`: one camera or pipeline name."""
    by_camera: dict[str, list[PipelineHandle]] = {}
    others: list[PipelineHandle] = []
    for h in src.handles:
        cam = names_of(h) or (h.name if h.name in registered else None)
        (by_camera.setdefault(cam, []) if cam else others).append(h)
    out: list[Readiness] = []
    for name in registered:
        mine = by_camera.get(name, [])
        live = [h for h in mine if h.status in LIVE or h.status == "error"] or mine[-1:]
        out += [pipeline_row(h, name, src) for h in live] if live else [camera_row(name)]
    out += [pipeline_row(h, "—", src) for h in others if h.status in LIVE or h.status == "error"]
    if only is not None:
        key = only.lower()
        out = [r for r in out if key in (r.camera.lower(), r.pipeline.lower())]
    return out


def table(found: list[Readiness]) -> list[list[str]]:
    """The header and at most MAX_ROWS rows (the last one says how many more), every cell non-empty."""
    body = [r.cells() for r in found]
    if len(body) > MAX_ROWS:
        more = len(body) - MAX_ROWS + 1
        body = body[:MAX_ROWS - 1] + [[f"… and {more} more", *["—"] * (len(COLUMNS) - 2),
                                       "ask for one: `/vision cameras NAME`"]]
    return [list(COLUMNS), *[[c or "—" for c in row] for row in body]]


def summary(found: list[Readiness]) -> str:
    """One line: how many can count, and each one that cannot with why (the status line, the heartbeat)."""
    if not found:
        return "no cameras or pipelines yet (add cameras to CAMERAS.md, or `/vision start SOURCE`)"
    can = sum(1 for r in found if r.can_count)
    not_ok = [r.short() for r in found if r.can_count is False or r.can_count is None and r.state in LIVE and r.why]
    idle = [r.camera if r.state == NOT_RUNNING else f"{r.camera} ({r.state})" for r in found
            if r.can_count is None and r.state not in LIVE]  # a registered camera, or one stopped or finished
    line = f"{can} of {len(found)} can count"
    if not_ok:
        line += "; " + "; ".join(not_ok[:5]) + (f"; and {len(not_ok) - 5} more" if len(not_ok) > 5 else "")
    if idle:
        line += f"; not running: {', '.join(idle[:10])}" + (" …" if len(idle) > 10 else "")
    return line


def text(found: list[Readiness]) -> str:
    """The table as plain lines (the terminal, a tool's result): one camera a line, the columns named."""
    if not found:
        return summary(found)
    lines = [f"Cameras ({summary(found)}):"]
    for r in found:
        head = r.camera if r.pipeline in ("—", r.camera) else f"{r.camera} (pipeline {r.pipeline})"
        if r.camera == "—":
            head = f"pipeline {r.pipeline}"
        age = f"; last frame {r.frame_age} ago" if r.frame_age != "—" else ""
        lines.append(f"- {head}: {r.state}; {r.resolution}; fps {r.fps}; people {r.person}; light {r.light}; "
                     f"motion {r.motion}{age}; can count: {r.cells()[-1]}")
    return "\n".join(lines)


async def of_manager(mgr: Any, registered: Mapping[str, str], only: str | None = None) -> list[Readiness]:
    """The rows of this process's pipelines (a PipelineManager, asked for their status now; what it last saw when
    its backend cannot answer) and the registered cameras (name -> URL)."""
    try:
        handles = await mgr.list()
    except BackendError:
        handles = mgr.snapshot()
    return of_handles(mgr, handles, registered, only)


def of_handles(mgr: Any, handles: list[PipelineHandle], registered: Mapping[str, str],
               only: str | None = None) -> list[Readiness]:
    """The rows of these pipelines of `mgr` (its `snapshot()` from a thread or a sync caller: the heartbeat)."""
    clips = getattr(mgr, "clips", None)

    def latest(pipeline_id: str) -> InferenceResult | None:
        try:
            return mgr.latest(pipeline_id)
        except Exception:  # noqa: BLE001 - a backend that cannot say leaves the row unmeasured, never the table
            return None

    def recent(pipeline_id: str, seconds: float) -> list[bytes]:
        return [f.jpeg for f in clips.recent(pipeline_id, seconds)] if clips is not None else []

    def names_of(h: PipelineHandle) -> str | None:
        return next((n for n, url in registered.items() if h.video_reference in (url, redact(url))), None)

    return rows(registered, Source(handles, latest, recent), names_of, only)

"""Event clips, the recording side: each pipeline's recent annotated frames (JPEG) in a ring buffer bounded in bytes."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bot.backends.base import InferenceResult, PipelineHandle
from bot.config.settings import ClipsConfig
from bot.media.clip_video import encode_clip
from workspace.atomic import write_atomic

log = logging.getLogger(__name__)

STALE_AFTER = 60.0  # seconds without a frame after which an ended pipeline's buffer is let go


@dataclass(frozen=True)
class ClipFrame:
    """One kept frame: the monotonic time it arrived in the bot and its JPEG bytes (as the pipeline produced them)."""

    at: float
    jpeg: bytes


class FrameRing:
    """One pipeline's frames: at most `fps` per second, `seconds` old, `max_bytes` of JPEG in all (oldest go first)."""

    def __init__(self, seconds: float, fps: float, max_bytes: int) -> None:
        self.seconds, self.interval, self.max_bytes = seconds, 1.0 / fps, max_bytes
        self._frames: deque[ClipFrame] = deque()
        self.bytes = 0
        self.last_at = 0.0
        self.short_by_bytes = False  # the byte bound, not the seconds, decided what is kept

    def push(self, at: float, jpeg: bytes, force: bool = False) -> bool:
        """Keep the frame unless one was kept less than 1/fps ago (`force`: the event's own frame); False when skipped."""
        if self._frames and self._frames[-1].jpeg is jpeg:
            return False
        if not force and not self.due(at):
            return False
        self._frames.append(ClipFrame(at, jpeg))
        self.bytes += len(jpeg)
        self.last_at = at
        while self._frames and (self.bytes > self.max_bytes or at - self._frames[0].at > self.seconds):
            self.short_by_bytes = at - self._frames[0].at <= self.seconds
            self.bytes -= len(self._frames.popleft().jpeg)
        return True

    def due(self, at: float) -> bool:
        """Whether a frame arriving at `at` would be kept (none kept in the last 1/fps)."""
        return not self._frames or at - self._frames[-1].at >= self.interval * 0.95  # 0.95: jitter must not halve the rate

    def span(self) -> float:
        return self._frames[-1].at - self._frames[0].at if self._frames else 0.0

    def between(self, start: float, end: float) -> list[ClipFrame]:
        return [f for f in self._frames if start <= f.at <= end]

    def __len__(self) -> int:
        return len(self._frames)


@dataclass(frozen=True)
class Clip:
    """A clip saved for an event; `event_at` is where the event is, in seconds from the clip's start."""

    path: Path
    camera: str
    rule: str
    event_at: float
    seconds: float
    fps: float
    frames: int
    codec: str
    bytes: int

    @property
    def clip_id(self) -> str:
        return self.path.stem


CLIP_ID = re.compile(r"^[A-Za-z0-9_-]{1,120}$")


def _slug(text: str) -> str:
    """A camera or rule name (user-given) reduced to characters safe in a file name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")[:40] or "camera"


class ClipRecorder:
    """A PipelineManager result listener: a FrameRing per pipeline, cut into an MP4 when an alert asks.

    Frames are stamped with the bot's own monotonic clock when they arrive, so "seconds before the event" means
    seconds as the bot saw them, whatever the source's timestamps say. Thread-safe: pushes come on pipeline threads.
    """

    def __init__(self, config: ClipsConfig, directory: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.config, self.directory, self.clock = config, Path(directory), clock
        # kept long enough that the "before" part is still there once the "after" part has been waited for
        self.retain = config.seconds_before + config.seconds_after + 2.0
        self._rings: dict[str, FrameRing] = {}
        self._lock = threading.Lock()

    def _ring(self, pipeline_id: str, now: float) -> FrameRing:  # holding self._lock
        ring = self._rings.get(pipeline_id)
        if ring is None:
            for pid in [p for p, r in self._rings.items() if now - r.last_at > STALE_AFTER]:
                del self._rings[pid]  # an ended pipeline's frames are let go
            ring = self._rings[pipeline_id] = FrameRing(self.retain, self.config.fps, self.config.buffer_bytes)
        return ring

    def on_result(self, handle: PipelineHandle, result: InferenceResult) -> None:
        if not self.config.enabled:
            return
        now = self.clock()
        with self._lock:
            if not self._ring(handle.pipeline_id, now).due(now):
                return  # asked before the frame: one the clip rate skips is never drawn or encoded
        jpeg = result.frame  # drawn and encoded here, outside the lock (milliseconds)
        if not jpeg:
            return
        with self._lock:
            ring = self._ring(handle.pipeline_id, now)
            short = ring.short_by_bytes
            ring.push(now, jpeg)
            if ring.short_by_bytes and not short:  # said once per pipeline
                log.warning("clips of %s hold only %.1f s of frames this large (%d KB each): raise clips.buffer_bytes "
                            "or lower clips.fps", handle.name, ring.span(), len(jpeg) // 1024)

    def mark(self, pipeline_id: str, frame: bytes | None) -> float | None:
        """The moment of an event (pipeline thread); its own frame is kept whatever the fps. None: clips are off."""
        if not self.config.enabled:
            return None
        now = self.clock()
        if frame:
            with self._lock:
                self._ring(pipeline_id, now).push(now, frame, force=True)
        return now

    def frames(self, pipeline_id: str, start: float, end: float) -> list[ClipFrame]:
        """The kept frames of a pipeline that arrived between two monotonic times (oldest first)."""
        with self._lock:
            ring = self._rings.get(pipeline_id)
            return ring.between(start, end) if ring is not None else []

    def recent(self, pipeline_id: str, seconds: float) -> list[ClipFrame]:
        """The kept frames of the last `seconds` (oldest first): whether the camera's picture moves lately."""
        now = self.clock()
        return self.frames(pipeline_id, now - seconds, now)

    def buffer_bytes(self, pipeline_id: str) -> int:
        """JPEG bytes the pipeline's ring holds now (what the memory bound is about)."""
        with self._lock:
            ring = self._rings.get(pipeline_id)
            return ring.bytes if ring is not None else 0

    async def record(self, pipeline_id: str, mark: float, camera: str, rule: str) -> Clip | None:
        """Wait (without blocking anyone) for the seconds after the event, then save the clip; None if too few frames."""
        cfg = self.config
        end = mark + cfg.seconds_after
        await asyncio.sleep(max(end - self.clock(), 0.0) + 0.05)  # + the frame in flight at `end`
        frames = self.frames(pipeline_id, mark - cfg.seconds_before, end)
        if len(frames) < 2:
            return None
        span = frames[-1].at - frames[0].at
        fps = min(cfg.fps, (len(frames) - 1) / span) if span > 0 else cfg.fps
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = self.directory / f"{_slug(camera)}-{stamp}-{secrets.token_hex(3)}.mp4"
        encoded = await asyncio.to_thread(encode_clip, [f.jpeg for f in frames], fps, cfg.max_bytes, path)
        if encoded is None:
            return None
        before = sum(1 for f in frames if f.at < mark)
        clip = Clip(path, camera, rule, round(before / fps, 2), round(encoded.seconds, 2), encoded.fps,
                    encoded.frames, encoded.codec, encoded.bytes)
        meta = {k: v for k, v in asdict(clip).items() if k != "path"}
        write_atomic(path.with_suffix(".json"), json.dumps(meta))
        await asyncio.to_thread(self._prune)
        return clip

    def _prune(self) -> None:
        """Only the newest `clips.keep` clips stay on disk."""
        def age(path: Path) -> float:
            try:
                return path.stat().st_mtime
            except OSError:  # pruned meanwhile by another alert's clip
                return 0.0

        clips = sorted(self.directory.glob("*.mp4"), key=age)
        for old in clips[: max(len(clips) - self.config.keep, 0)]:
            old.unlink(missing_ok=True)
            old.with_suffix(".json").unlink(missing_ok=True)

    def find(self, clip_id: str) -> Clip | None:
        """A saved clip by id (its file stem); ids come from the model, so only plain names inside the folder."""
        if not CLIP_ID.match(clip_id):
            return None
        path = self.directory / f"{clip_id}.mp4"
        meta_path = path.with_suffix(".json")
        if not (path.is_file() and meta_path.is_file()):
            return None
        try:
            return Clip(path=path, **json.loads(meta_path.read_text()))
        except (ValueError, TypeError, RecursionError):
            log.warning("clip %s has unreadable metadata", clip_id)
            return None

"""What `fps=` means for a source, in the words a start reply uses: a camera's cap, or a file's sampling rate."""

from __future__ import annotations

from dataclasses import dataclass

from bot.media.sources import is_live


@dataclass(frozen=True)
class Rate:
    """The frame rate a pipeline was asked for (None: not capped), on what source, run by which backend."""

    fps: float | None
    source: str
    source_fps: float | None = None  # a video file's own rate, when known
    backend: str = "direct"

    def describe(self) -> str:
        """', sampling 5 frames per second of video (1 in 5 of its 25 fps), in real time' and the like."""
        if is_live(self.source):
            return f" at up to {self.fps:g} fps" if self.fps else ""
        own = f"{self.source_fps:g} fps" if self.source_fps else "its own rate"
        if self.fps is None:
            return ", every frame of the file as fast as the detector goes (fps=N samples N frames per second of video)"
        if self.backend == "webrtc":
            return f", the file played in real time at {own}, the detector taking what it keeps up with"
        if self.backend != "direct":  # the inference server paces every frame: a faster file plays slower
            return f", every frame of the file at up to {self.fps:g} fps (slower than real time when its {own} is more)"
        if self.source_fps and self.fps >= self.source_fps:
            return f", every frame of its {own}, in real time (fps={self.fps:g} is not below the file's rate)"
        step = f" (about 1 in {self.source_fps / self.fps:.3g} of its {own})" if self.source_fps else ""
        frames = "frame" if self.fps == 1 else "frames"  # fps=1 read 'sampling 1 frames per second'
        return f", sampling {self.fps:g} {frames} per second of video{step}, in real time as a camera would give them"

"""Daylight footage made into night, IR and a cheap sensor's noisy night: what bench/envelope.py and the light clips
in tests/fixtures/data (bench/_light_fixtures.py) count on.

A camera at night: the scene lit ~10-30x less, so the sensor's gain and the camera's gamma lift a dark, flat picture
(mean luminance 15-45 of 255, the shadows crushed, colour washed out). A cheap sensor adds its noise after that gain:
shot noise (Poisson, grows with the light), read noise (Gaussian, the same everywhere), a little chroma noise (the
Bayer colours disagree), and then the encoder smears it into blocks. An IR camera (the cut filter out, its own LEDs
on) gives a grey picture, bright in the middle where the illuminator reaches and falling off to the edges, with clothes
and skin at contrasts unlike daylight (fabrics reflect IR differently: a dark coat may come out pale).

Each transform is deterministic: its noise comes from a seeded generator, frame k drawing from seed (seed, k).
`strength` spans a range: night 1 = a lit street at night (~1/12 of the light), 2 = a darker one (~1/25); noise 1 =
a cheap sensor at night, 0.5 = a better one, 2 = a very poor one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Light:
    """One light condition: how dark (0 = as shot), grey IR or not, how much sensor noise (0 = none)."""

    name: str
    dark: float = 0.0  # 1: a lit street at night; 2: darker
    ir: float = 0.0  # 1: an IR camera's grey picture; 2: a harsher one (a strong spot, the contrast pushed)
    noise: float = 0.0  # 1: a cheap sensor at night
    seed: int = 32

    def apply(self, frame: np.ndarray, k: int) -> np.ndarray:
        """Frame k (BGR uint8) in this light."""
        out = frame.astype(np.float32) / 255.0
        if self.ir:
            out = _ir(out, self.ir)
        if self.dark:
            out = _night(out, self.dark, grey=bool(self.ir))
        if self.noise:
            out = _noise(out, self.noise, np.random.default_rng((self.seed, k)), grey=bool(self.ir))
        return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)


DAYLIGHT = Light("daylight")
# The range a camera meets from dusk to a noisy night and IR; the first three are the named cases.
CONDITIONS = (
    Light("night", dark=1.0),
    Light("ir", ir=1.0),
    Light("noisy night", dark=1.0, noise=1.0),
    Light("dark night", dark=2.0),
    Light("night, less noise", dark=1.0, noise=0.5),
    Light("dusk, noisy", dark=0.5, noise=1.0),
    Light("ir, noisy", ir=1.0, noise=0.7),
    Light("ir, harsh", ir=2.0),
    Light("dark night, noisy", dark=2.0, noise=1.5),
)


def _luma(x: np.ndarray) -> np.ndarray:
    return 0.114 * x[..., 0] + 0.587 * x[..., 1] + 0.299 * x[..., 2]


def _night(x: np.ndarray, dark: float, grey: bool) -> np.ndarray:
    """Less light (a factor 2^-(2.3 + 1.3 dark) of the scene's, in linear terms), lifted by the camera's gain to a dim
    picture: the linear light divided, a gain that brings the brightest back only part of the way, gamma back, and
    colour washed out toward grey (the eye and the sensor both lose it first)."""
    linear = x**2.2
    light = 2.0 ** -(3.6 + 3.0 * dark)  # 1: ~1/100 of the light; 2: ~1/800
    gain = 2.0 ** (1.2 + dark)  # the camera lifts what it can (it cannot lift it all: noise would show)
    lit = 0.03 + 0.94 * np.clip(linear * light * gain, 0.0, 1.0) ** (1 / 2.2)  # a little flare lifts the blacks
    if grey:
        return lit
    y = _luma(lit)[..., None]
    keep = max(0.2, 0.6 - 0.2 * dark)  # the share of colour left
    return y + keep * (lit - y)


def _ir(x: np.ndarray, strength: float) -> np.ndarray:
    """Grey, lit from the camera: the illuminator's spot (bright in the middle, ~40 % at the corners), IR's own
    contrasts (reds and greens reflect more in near-IR, blues less: vegetation and many fabrics come out pale), and
    the camera's contrast stretch."""
    h, w = x.shape[:2]
    ir = 0.2 * x[..., 0] + 0.35 * x[..., 1] + 0.45 * x[..., 2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h / 2) / (h / 2)) ** 2
    spot = 1.0 / (1.0 + 0.8 * strength * r2)
    grey = np.clip(ir * spot, 0.0, 1.0)
    grey = np.clip((grey - 0.04 * strength) * (1.0 + 0.3 * strength), 0.0, 1.0) ** (1.0 - 0.1 * strength)  # the camera's auto-contrast on a flat picture
    return np.repeat(grey[..., None], 3, axis=2)


def _noise(x: np.ndarray, strength: float, rng: Any, grey: bool) -> np.ndarray:
    """A cheap sensor's noise at night: shot noise (its variance grows with the light), read noise, and chroma noise
    (each colour's own); `strength` 1 is a 1/3" sensor at high gain."""
    shot = np.sqrt(np.clip(x, 0.0, 1.0) * (0.012 * strength) ** 2 * 20.0)
    read = 0.035 * strength
    luma = rng.standard_normal(x.shape[:2]).astype(np.float32)[..., None]
    noisy = x + luma * np.sqrt(shot**2 + read**2)
    if not grey:
        chroma = rng.standard_normal(x.shape).astype(np.float32)
        noisy = noisy + chroma * (0.012 * strength)
    return noisy


def transform(frames: dict[int, np.ndarray], light: Light) -> dict[int, np.ndarray]:
    return {k: light.apply(f, k) for k, f in frames.items()}


def derive(video: Any, light: Light, path: Any, frames: range | None = None, scale: float = 1.0,
           crf: int = 26, sensor: int = 1) -> Any:
    """`video` (all of it, or the frame indices in `frames`) in this light, scaled, as an x264 mp4 at `path` (a
    camera's encoder: crf 26 smears a noisy night into blocks as a real one does); the path. Made once: an existing
    file is kept (the transform is deterministic). `sensor`: how many times larger the sensor's picture is than
    `video` (a sub-stream clip: its frames are enlarged, given the light and the noise there, and scaled back, so the
    noise is averaged as a camera's sub-stream averages it)."""
    from pathlib import Path

    import av
    import cv2

    path = Path(path)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    cap = cv2.VideoCapture(str(video))
    fps = cap.get(cv2.CAP_PROP_FPS) or 10.0
    step = frames.step if frames is not None else 1
    tmp = path.with_suffix(".part.mp4")
    try:
        with av.open(str(tmp), mode="w", format="mp4") as out:
            stream: Any = None
            index = 0
            while (got := cap.read())[0]:
                if frames is None or index in frames:
                    frame = got[1]
                    if sensor > 1:
                        frame = cv2.resize(frame, None, fx=sensor, fy=sensor, interpolation=cv2.INTER_LINEAR)
                    frame = light.apply(frame, index)  # on the sensor's picture: a sub-stream is scaled from it
                    if sensor > 1:
                        frame = cv2.resize(frame, (got[1].shape[1], got[1].shape[0]), interpolation=cv2.INTER_AREA)
                    if scale != 1.0:
                        frame = cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
                    if stream is None:
                        stream = out.add_stream("libx264", rate=round(fps / step), options={"crf": str(crf)})
                        stream.width, stream.height = frame.shape[1] // 2 * 2, frame.shape[0] // 2 * 2
                        stream.pix_fmt = "yuv420p"
                    even = np.ascontiguousarray(frame[: stream.height, : stream.width])
                    out.mux(stream.encode(av.VideoFrame.from_ndarray(even, format="bgr24")))
                index += 1
            if stream is not None:
                out.mux(stream.encode(None))
    finally:
        cap.release()
    tmp.rename(path)
    return path

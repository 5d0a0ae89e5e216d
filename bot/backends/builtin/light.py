"""How much light and sensor noise a camera's picture has, and the picture builtin/people scans made to suit it.

HOG compares the direction of edges in small cells. At night a camera's gain lifts a dim scene into a flat picture
(mean brightness ~20-40 of 255) whose few grey levels the encoder flattens further, and a cheap sensor's noise, lifted
with it, puts edges everywhere: on the street footage (bench/envelope.py's light rows) a darker night lost ~1 person in
7 and a noisy night every person, with nothing said. So each camera's picture is measured now and then on a sample
of its frame (every second pixel of every second row: no averaging, so the noise stays as the detector sees it):

- brightness: the mean grey level; under DARK_LUMA the crops the detector scans are turned grey and their contrast
  is equalised tile by tile (CLAHE, tiles a few people tall), spreading the few dark levels people are drawn in
  (labelled street frames, a darker night: 0.75 of people found as it was, 0.85 with a gamma lift, 0.94 so);
- noise: the median change of a pixel between two measurements, beyond the change of the whole picture (a still
  pixel changes only by noise; people and cars are a small share of a frame, so the median ignores them); from
  NOISY_LEVELS grey levels the crops are blurred first (then equalised), more the more the noise drowns the
  picture's contrast, in the detector's own pixels (a blur that smooths noise at its scale, not people): a noisy
  night's 0 of people found becomes ~0.6 per frame. Averaging frames over time blurred walkers more than noise.

Both are measured at most every MEASURE_SECONDS of video and smoothed over SMOOTH_SECONDS, so a passing car or a
headlight does not switch them. Where even that leaves the detector blind, the light is too poor to count: in a
picture this dark or noisy, of the moving blobs shaped like a standing person, under SEEN_SHARE have a person found
on them (over about SHARE_SECONDS). Counting needs far less than every person in every frame (the tracker bridges
misses: a noisy night found 0.47 of people a frame and counted 35 of 37), so the share is per blob, not per moment
(a street of five walkers with one in ten found still has someone found in a third of its frames). While it stays
under, `unseen_seconds` grows and bot/pipelines/limits.py says the light is too poor to count, with what would help.

Such a camera rests: after REST_AFTER seconds of video so unseen while it finds someone in under half the moments
with person-shaped motion (AWAKE_SHARE), or of a poor picture in which no one at all was found (an
empty garden at night), the detector looks once every REST_SECONDS of video (the motion gate repeats its
last findings in between: builtin/people) instead of on every frame. A poor picture's noise is motion everywhere, so
every frame was a whole-frame scan, lifted and denoised: on the street made too dark and noisy (the light test's
clip, 384x288 at 2 fps) 224 ms of CPU a frame, against 97 lit and 67-93 on the countable night, IR and dusk pictures,
where someone is found every few frames and the share never fell under SEEN_SHARE. It still measures the light each
time and counts its unseen time by the clock, so the verdict comes as soon. The light coming back ends the rest, and
so does a find in a picture where no one was found (someone walks into the empty garden), or a share lifted back.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

MEASURE_SECONDS = 0.5  # of video between two measurements (the light changes over minutes)
SMOOTH_SECONDS = 5.0  # the measurements' running mean spans about this
DARK_LUMA = 60.0  # mean grey level under which the picture is equalised (a lit street by day: ~120; night: 20-45)
TILE_HOG_PX = 400.0  # CLAHE's tile in the detector's pixels (the typical person is ~160 there: 2-3 people tall)
CLIP_LIMIT = 2.0  # CLAHE's cap on a tile's histogram (more lifts noise and texture into false people)
NOISY_LEVELS = 2.5  # a still pixel's typical change (grey levels) from which the picture is denoised; a clean
# camera's is 0-1 (the encoder repeats still blocks), a cheap sensor's at night 5-12
BLUR_HOG_PX = (2.0, 4.0)  # the denoising blur's sigma in the detector's pixels (a person ~96 px tall there): from the
# least, at noise of a fifth of the picture's contrast (its grey levels' spread), to the most, at half of it and over
MOTION_LUMA = 200.0  # a dark picture's copy for the background model is brightened to this mean (128: 4.7 found)
MAX_GAIN = 8.0  # beyond, a nearly black picture's copy would be noise and compression blocks
SEEN_SHARE = 0.2  # of person-shaped moving blobs with a person found on them: under it, the people are not seen
SHARE_SECONDS = 30.0  # the share's running mean spans about this much video with such motion
HYSTERESIS = 1.2  # a camera's light, once poor, is good again only this far past the threshold
MIN_SPREAD = 4.0  # grey levels: a picture flatter than this is not measured for contrast (black, a lens cap)
REST_AFTER = 20.0  # seconds of video unseen (the share under SEEN_SHARE in a poor picture) before the camera rests
REST_SECONDS = 1.0  # of video between two looks of a resting camera's detector
AWAKE_SHARE = 0.5  # of moments with person-shaped motion, the share with someone found that keeps a camera awake


@dataclass
class LightState:
    """One camera's measured light: mean grey level, its spread, the noise of a still pixel (all 0-255), smoothed."""

    luma: float | None = None
    spread: float | None = None  # standard deviation of the grey levels: the picture's contrast
    noise: float | None = None
    sample: np.ndarray | None = None  # the grey sample the last measurement took, for the next one's difference
    measured_at: float | None = None  # video time of the last measurement
    unseen: float = 0.0  # seconds of video with person-shaped motion mostly unseen (under SEEN_SHARE), picture poor
    seen_share: float = 1.0  # of person-shaped moving blobs, the share with a person found on them (running mean)
    idle: float = 0.0  # seconds of video of a poor picture in which no one at all was found

    is_dark: bool = False  # on under DARK_LUMA, off only over HYSTERESIS times it (a dusk does not flicker)
    is_noisy: bool = False  # on from NOISY_LEVELS, off only under it / HYSTERESIS

    def dark(self) -> bool:
        return self.is_dark

    def noisy(self) -> bool:
        return self.is_noisy

    def poor(self) -> bool:
        """The picture is one the detector has to be helped with (and may still not see people in)."""
        return self.dark() or self.noisy()

    def resting(self, found_share: float) -> bool:
        """The detector found no one in this poor picture, or has been blind in it while it finds someone in under
        AWAKE_SHARE of the moments things shaped like people move (`found_share`: people_scale.CameraState's), long
        enough to look only once every REST_SECONDS (module doc). A camera that finds someone most moments keeps
        looking at every frame however many noise blobs stay unseen: a 320x240 night street at 2 fps found people in
        9 frames of 10 with its share of blobs seen at 0.12-0.28; the blind sub-stream found someone in a quarter."""
        return self.idle >= REST_AFTER or (self.unseen >= REST_AFTER and found_share < AWAKE_SHARE)

    def blur(self, scale: float) -> float:
        """The denoising blur's sigma in frame px for a scan at `scale` (0: none)."""
        if not self.noisy() or self.noise is None:
            return 0.0
        share = self.noise / max(self.spread or 0.0, MIN_SPREAD)
        low, high = BLUR_HOG_PX
        hog_px = float(np.interp(share, (0.2, 0.5), (low, high)))
        return hog_px / max(scale, 1e-3)


def measure(state: LightState, frame: np.ndarray, now: float | None) -> None:
    """Take a measurement if MEASURE_SECONDS of video passed since the last (`now`: seconds into the video; None for
    a still, measured each time)."""
    last = state.measured_at
    if now is not None and last is not None and 0.0 <= now - last < MEASURE_SECONDS:
        return
    weight = 1.0 if now is None or last is None else min(1.0, max(0.0, now - last) / SMOOTH_SECONDS)
    state.measured_at = now
    sample = np.ascontiguousarray(frame[::2, ::2])
    grey = cv2.cvtColor(sample, cv2.COLOR_BGR2GRAY) if sample.ndim == 3 else sample
    mean, std = cv2.meanStdDev(grey)
    state.luma = _mix(state.luma, float(mean[0][0]), weight)
    state.spread = _mix(state.spread, float(std[0][0]), weight)
    if state.sample is not None and state.sample.shape == grey.shape:
        # a - b of two noisy readings of a still pixel: sigma sqrt 2, whose median distance from its median is 0.954
        # sigma; the median first (the whole picture a little brighter: a cloud, the camera's exposure) is not noise
        diff = grey[::2, ::2].astype(np.int16) - state.sample[::2, ::2]
        change = float(np.median(np.abs(diff - np.median(diff)))) / 0.954
        state.noise = _mix(state.noise, change, weight)
    state.sample = grey
    if state.luma is not None:
        state.is_dark = state.luma < DARK_LUMA * (HYSTERESIS if state.is_dark else 1.0)
    if state.noise is not None:
        state.is_noisy = state.noise >= NOISY_LEVELS / (HYSTERESIS if state.is_noisy else 1.0)


def prepare(state: LightState | None, part: np.ndarray, scale: float) -> np.ndarray:
    """A crop of the frame as the detector should scan it at `scale`: as it is in good light; else grey (colour is
    gone at night, and HOG on one channel costs less), denoised if noisy, and equalised."""
    if state is None or not state.poor():
        return part
    grey = cv2.cvtColor(part, cv2.COLOR_BGR2GRAY) if part.ndim == 3 else part
    sigma = state.blur(scale)
    if sigma >= 0.3:
        grey = cv2.GaussianBlur(grey, (0, 0), sigma)
    tile = TILE_HOG_PX / max(scale, 1e-3)  # frame px
    grid = (max(1, round(grey.shape[1] / tile)), max(1, round(grey.shape[0] / tile)))
    return cv2.createCLAHE(clipLimit=CLIP_LIMIT, tileGridSize=grid).apply(grey)


def brighten(state: LightState, small: np.ndarray) -> np.ndarray:
    """The background model's small copy of a dark picture, brightened (its mean to MOTION_LUMA). Dark walkers on a
    dark street differ from it by a few grey levels, under what the model takes for motion: they came apart into
    fragments, people read ~0.85 of their height and the detector scanned crops too small to hold them (a darker
    night: 3.1 people found a frame; brightened, 5.0). Smoothing a noisy copy instead lost more walkers than noise."""
    if not state.dark() or state.luma is None:
        return small
    return cv2.convertScaleAbs(small, alpha=min(MAX_GAIN, MOTION_LUMA / max(state.luma, 1.0)))


def account(state: LightState, shaped: list[tuple[int, int, int, int]], found: np.ndarray, dt: float,
            sample: float | None = None) -> None:
    """After the detector ran: of this frame's person-shaped moving blobs (frame px), the share with a person found
    on them (`found`: boxes xyxy) joins the running share; a poor picture's time under SEEN_SHARE is `unseen` (reset
    when the share comes back or the light does), and its time with no one found at all `idle` (reset by a find).
    `sample`: the seconds this one frame's share weighs, when under `dt` (a resting camera's look is one frame's
    sample for a second of video: weighed as a second, one lucky look lifted a blind street's share over SEEN_SHARE
    and its too-poor line never came)."""
    if shaped:
        seen = sum(_covered(box, found) for box in shaped) / len(shaped)
        weight = dt if sample is None else min(dt, sample)
        state.seen_share += (seen - state.seen_share) * min(1.0, weight * len(shaped) / SHARE_SECONDS)
    if not state.poor() or state.seen_share >= SEEN_SHARE:
        state.unseen = 0.0
    elif shaped:
        state.unseen += dt
    state.idle = 0.0 if not state.poor() or len(found) else state.idle + dt


def _covered(blob: tuple[int, int, int, int], found: np.ndarray) -> bool:
    """A person was found on this blob: a found box holds the blob's centre (blobs of a walker are often a part of
    them, and boxes are looser than the person)."""
    if len(found) == 0:
        return False
    cx, cy = (blob[0] + blob[2]) / 2.0, (blob[1] + blob[3]) / 2.0
    boxes = np.asarray(found, np.float32).reshape(-1, 4)
    inside = (boxes[:, 0] <= cx) & (cx <= boxes[:, 2]) & (boxes[:, 1] <= cy) & (cy <= boxes[:, 3])
    return bool(inside.any())


def conditions(state: LightState) -> dict[str, float | str | None]:
    """What the picture's light says (part of builtin/people's `camera` output; bot/pipelines/limits.py reads
    `poor_light` and, with it, `unseen_seconds`)."""
    poor = " and ".join(w for w, on in (("dark", state.dark()), ("noisy", state.noisy())) if on)
    return {"luma": _round(state.luma), "contrast": _round(state.spread), "noise": _round(state.noise),
            "poor_light": f"too {poor}" if poor else None, "unseen_seconds": round(state.unseen, 1),
            "seen_share": round(state.seen_share, 2)}


def _mix(old: float | None, new: float, weight: float) -> float:
    return new if old is None else old + (new - old) * weight


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)

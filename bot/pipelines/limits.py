"""When a camera is outside what the bot counts reliably: one line saying why and what to do, or None.

Read from what a pipeline measures of its own camera, never from constants fitted to one video: builtin/people's
`camera` output (people's typical height from person-shaped moving blobs, the smallest person its largest upscale
finds, how long such motion went on with no one found: bot/backends/builtin/people_scale.py; whether people only
appear with the frame turned: people_turn.py) and the tracker's
`tracking` output (the stream's real frame interval, how much of its reach tracks use: bot/backends/builtin/tracker.py).
The camera's light (too dark or noisy for the detector, helped as it is: bot/backends/builtin/light.py) is said only
with what it cost, minutes of things moving with no one found; a dark camera whose people are found says nothing.
At start only the rate asked for is known. `status_line` shows the line, so `/vision status`, `/vision list`, the
agent's pipeline tools and the heartbeat all say it; `/vision start` and start_pipeline add the start-time one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bot.backends.counting import TRACKER_SETTINGS
from bot.backends.orientation import ORIENTATION_OUTPUT, Orientation

HEAD = "cannot count reliably: "
DARK = ("too dark", "too dark and noisy")  # the `poor_light` values in which noise blobs misread people's size
POOR_LIGHT = (*DARK, "too noisy")  # builtin/people's `poor_light` (light.py)
BLIND_SECONDS = 120.0  # person-shaped motion this long with no one found: the detector does not see these people
REACH_USED = 0.8  # one matched move in ten uses this share of the tracker's reach: the faster ones are being lost
BRIDGED_MISSES = 1  # a track must outlive this many missed frames in a row (a detector misses now and then)
# The tracker keeps a lost track this long (lost_track_buffer counts 1/30 s), whichever tracker a model gets.
LOST_SECONDS = TRACKER_SETTINGS["lost_track_buffer"] / 30.0


def cannot_count(values: Mapping[str, Any] | None) -> str | None:
    """The one line for a running pipeline's latest result values, or None (within limits, or not measured yet)."""
    if not isinstance(values, Mapping):
        return None
    if line := turned(values):  # a turned camera explains not seeing anyone: its setting is the remedy
        return line
    camera, tracking = _part(values, "camera"), _part(values, "tracking")
    # Not seeing the people comes before the rate: a tracker fed stray hits looks "too fast", and raising fps would
    # not help a detector that does not find them.
    # A picture too dark to see people in comes first; in it the size is not said at all (`_small`).
    for why in (_too_dark(camera), _too_small(camera), _blind(camera),
                _too_slow(_num(tracking, "interval"), _num(tracking, "lost_seconds")), _too_fast(tracking)):
        if why:
            return HEAD + why
    return None


def turned(values: Mapping[str, Any] | None) -> str | None:
    """The line for a camera that looks mounted turned (builtin/people's `camera.turned`, people_turn.py), with the
    setting that turns its frames upright from the one the pipeline runs with (its `orientation` output), or None."""
    if not isinstance(values, Mapping):
        return None
    turn = _part(values, "camera").get("turned")
    if turn not in (90, 180, 270):
        return None
    now = Orientation.from_output(values.get(ORIENTATION_OUTPUT)) or Orientation()
    fix = now.then(turn)
    how = "upside down" if turn == 180 else f"lying down, heads to the {'left' if turn == 90 else 'right'}"
    looks = "rotated 180°" if turn == 180 else f"rotated 90°{' the other way' if turn == 270 else ''}"
    what = f"the camera looks {looks}" if not now else f"with {now.words()} the picture still looks {looks}"
    row = f"Rotate {fix.rotate}" + (f" and Flip {fix.flip}" if fix.flip else "")
    return f"people appear {how}: {what}; restart it with {fix.words()} (or set {row} in its CAMERAS.md row)"


def at_start(model_id: str | None, max_fps: float | None) -> str | None:
    """The line for a start whose rate alone is too low to track (a model's pipelines always track), or None."""
    if model_id is None or not max_fps:
        return None
    why = _too_slow(1.0 / max_fps, LOST_SECONDS)
    return HEAD + why if why else None


def _part(values: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    part = values.get(key)
    return part if isinstance(part, Mapping) else {}


def _num(values: Mapping[str, Any], key: str) -> float | None:
    """A finite number from a value a workflow output (an inline spec may name one `camera`) carried, else None."""
    value = values.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _too_small(camera: Mapping[str, Any]) -> str | None:
    if (sizes := _small(camera, settled=True)) is None:
        return None
    typical, smallest = sizes
    return (f"people here are about {typical:.0f} px tall and builtin/people finds people from about "
            f"{smallest:.0f} px — use the main stream (a higher resolution) or a Roboflow model")


def small_so_far(values: Mapping[str, Any] | None) -> str | None:
    """People measured under the detector's smallest while the measure still settles, in words, or None. Not a
    cannot_count line (its first blobs read up to ~40 % short of the settled height on real footage, so no alert
    says it yet): readiness shows it as a maybe. A 160x120 camera's people (~17 px of 24) were a 'yes' for the
    first ~20 s of frames (field test)."""
    if (sizes := _small(_part(values, "camera") if isinstance(values, Mapping) else {}, settled=False)) is None:
        return None
    typical, smallest = sizes
    return (f"still measuring people's size: about {typical:.0f} px tall so far, under the {smallest:.0f} px "
            "builtin/people finds — if that holds, use the main stream (a higher resolution) or a Roboflow model")


def _small(camera: Mapping[str, Any], settled: bool) -> tuple[float, float] | None:
    """(people's typical height, the smallest the detector finds) when people measure under it and the measure is
    `settled` (or still settling); None otherwise, and in a dark picture, whose noise blobs misread sizes (an empty
    dark garden's leaves read as people 15 px tall). A bright picture that reads noisy (a 160x120 stream's JPEG
    blocks) keeps its size: its blobs are people (field test: 17 px of 24, 1 crossing of 16, said nothing)."""
    typical, smallest = _num(camera, "person_px"), _num(camera, "smallest_px")
    if camera.get("poor_light") in DARK or camera.get("settled") is not settled or typical is None or \
            smallest is None or typical >= smallest:
        return None
    return typical, smallest


def _too_slow(interval: float | None, lost_seconds: float | None) -> str | None:
    """A frame interval at which one missed detection already loses a track (its count with it)."""
    if interval is None or lost_seconds is None or interval <= 0 or (BRIDGED_MISSES + 1) * interval <= lost_seconds:
        return None
    needed = (BRIDGED_MISSES + 1) / lost_seconds
    return (f"frames come every {interval:.2g} s ({1 / interval:.2g} fps) and a track is dropped after "
            f"{lost_seconds:.2g} s unseen, so a person missed in one frame is lost — raise fps to {needed:.2g} or more "
            f"(fps=, or the camera's own rate; a camera that already sends more is waiting on this machine's CPU: "
            f"fewer cameras or a smaller stream)")


def _too_fast(tracking: Mapping[str, Any]) -> str | None:
    used, interval = _num(tracking, "reach_used"), _num(tracking, "interval")
    if used is None or used < REACH_USED:
        return None
    rate = f" at {1 / interval:.2g} fps" if interval else ""
    return (f"things move nearly as far between frames{rate} as the tracker can follow ({used:.0%} of its reach), "
            "so the fastest are lost — raise fps")


def _blind(camera: Mapping[str, Any]) -> str | None:
    seconds = _num(camera, "blind_seconds")
    if seconds is None or seconds < BLIND_SECONDS:
        return None
    return (f"things shaped like people have moved for {seconds / 60:.0f} min with (almost) no one found — if people pass "
            "here, use a Roboflow model (builtin/people misses people far off, sitting or seen from above)")


def _too_dark(camera: Mapping[str, Any]) -> str | None:
    """A picture the detector measured as too dark or noisy (`poor_light`) in which, for minutes, people-shaped
    motion mostly had no one found on it (`unseen_seconds`, builtin/light.py): the light, not the people's size or
    the rate, is what to fix."""
    poor = camera.get("poor_light")
    seconds = _num(camera, "unseen_seconds") or 0.0
    if poor not in POOR_LIGHT or seconds < BLIND_SECONDS:
        return None
    luma, noise, share = _num(camera, "luma"), _num(camera, "noise"), _num(camera, "seen_share")
    measured = [f"mean brightness {luma:.0f} of 255" if luma is not None else "",
                f"noise ±{noise:.0f} grey levels" if noise is not None and "noisy" in poor else ""]
    said = ": " + ", ".join(m for m in measured if m) if any(measured) else ""
    found = f" (a person found on {share:.0%} of them)" if share is not None else ""
    return (f"the light is too poor to find people (the picture is {poor}{said}); things shaped like people moved "
            f"for {seconds / 60:.0f} min mostly unseen{found} — an IR illuminator or more light, the main stream "
            "(less noise) or a Roboflow model would help" + (
                "; until then the detector looks once a second, to spare the CPU" if camera.get("resting") else ""))

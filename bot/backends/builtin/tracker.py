"""A tracker for low frame rates: association by predicted position, reach set by the time between frames.

ByteTrack (roboflow_core/byte_tracker) matches a box to a track only when they overlap, and a new track is shown only
once its second box overlaps its first. At 2-3 fps a walking person moves a box-width or more between frames: no
overlap, so no one was ever tracked and nothing counted (8 of ~30 crossings on vtest.avi at 2 fps). Here each track
predicts where it is now from its velocity and the real time since it was seen (video time: frame number / fps for
files), and a box joins the nearest track whose prediction is within reach: the distance an object of its height
can cover in that time (`max_speed`, in its own heights per second). A track is shown only once it has been seen
for `min_seen_seconds` of the stream, each sighting counting the stream's real frame interval (a detector's false
alarm on leaves or texture lasts a frame or two at 10 fps; a person is in view for seconds): 3 frames at 10 fps,
2 at 5, the first one at 3 fps or less, where one frame already spans that long. Same inputs, settings and outputs
as byte_tracker@v3, so counting, zones and alerts read it unchanged (block vision_agent/tracker@v1).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import supervision as sv
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    DICTIONARY_KIND,
    FLOAT_KIND,
    FLOAT_ZERO_TO_ONE_KIND,
    IMAGE_KIND,
    INTEGER_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field
from scipy.optimize import linear_sum_assignment

from bot.backends.builtin.common import _EE_COMPAT
from bot.backends.builtin.line_counter import video_time

MAX_VIDEOS = 64  # videos tracked at once per block; the least recently seen goes first
MAX_TRACKS = 1_000  # live tracks per video, whatever a detector outputs
SETTLE = 0.3  # reach (in heights) even with no time between frames: a box jitters around a still person
WINDOW = 100  # recent frame intervals and matched steps kept per video, for the `tracking` output
CONSISTENT = 0.5  # a step is motion when it lands within this share of its length of where its track was going
_FAR = 1e6
_KINDS = [OBJECT_DETECTION_PREDICTION_KIND]


class TrackerManifest(WorkflowBlockManifest):
    type: Literal["vision_agent/tracker@v1"]
    model_config = ConfigDict(json_schema_extra={
        "name": "Tracker (low frame rate)",
        "version": "v1",
        "short_description": "Track objects across frames by predicted position, at any frame rate.",
        "long_description": (
            "Like roboflow_core/byte_tracker@v3 (same settings and outputs) but a box joins the nearest track "
            "whose predicted position (velocity x the real time since it was seen) is within reach: `max_speed` "
            "of its own heights per second. Works at 2-3 fps, where people move a box-width between frames."),
        "license": "Apache-2.0",
        "block_type": "transformation",
        "ui_manifest": {"section": "video", "icon": "far fa-location-crosshairs"},
    })
    # Any image, not only a workflow input: a turned camera's upright frame (orient@v1), whose size is the one its
    # boxes are in.
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame, for its video metadata and size.",
                                               examples=["$inputs.image"])
    detections: Selector(kind=_KINDS) = Field(description="Detections to track.",
                                              examples=["$steps.detector.predictions"])
    track_activation_threshold: float | Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) = Field(
        default=0.25, description="A box starts a new track only this sure.")
    lost_track_buffer: int | Selector(kind=[INTEGER_KIND]) = Field(
        default=60, description="How long a lost track is kept, in 1/30 s (as byte_tracker counts it): 60 = 2 s.")
    minimum_matching_threshold: float | Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) = Field(
        default=0.99, description="As byte_tracker: a box overlapping a track's box by IoU x conf >= 1 - this "
                                  "always may join it (besides the distance rule).")
    max_speed: float | Selector(kind=[FLOAT_KIND]) = Field(
        default=2.0, description="Fastest an object moves, in its own heights per second (a walker: ~1).")
    min_seen_seconds: float | Selector(kind=[FLOAT_KIND]) = Field(
        default=0.3, description="A track is output once seen in frames covering this much of the stream, each "
                                 "frame counting the stream's real interval (3 frames at 10 fps, 1 at 3 fps); 0: "
                                 "at once.")

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        # `tracking`: the stream's real frame interval and how much of its reach tracks use (its limits)
        return [OutputDefinition(name=n, kind=_KINDS)
                for n in ("tracked_detections", "new_instances", "already_seen_instances")] + [
                OutputDefinition(name="tracking", kind=[DICTIONARY_KIND])]

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT


@dataclass
class _Track:
    box: np.ndarray  # xyxy when last seen
    velocity: np.ndarray  # px/s of the box's centre
    time: float
    class_id: int
    seen: float = 0.0  # seconds of the stream it was seen in: each sighting counts one frame interval


class _Video:
    def __init__(self) -> None:
        self.tracks: OrderedDict[int, _Track] = OrderedDict()
        self.next_id = 1
        self.clock: float | None = None  # video time of the previous frame
        self.intervals: deque[float] = deque(maxlen=WINDOW)  # seconds between frames, as the stream delivers them
        self.used: deque[float] = deque(maxlen=WINDOW)  # a matched box's move / the reach it had (moving ones)

    def tracking(self, lost_seconds: float) -> dict[str, float | int | None]:
        """The stream's real frame interval and how far tracks move for the reach they have (the `tracking` output)."""
        interval = float(np.median(self.intervals)) if self.intervals else None
        used = float(np.percentile(self.used, 90)) if len(self.used) >= 10 else None
        return {"interval": None if interval is None else round(interval, 3), "lost_seconds": round(lost_seconds, 2),
                "reach_used": None if used is None else round(used, 2), "steps": len(self.used)}


def confirmed(video: _Video, ids: np.ndarray, fallback_interval: float, min_seen: float) -> np.ndarray:
    """Which of a frame's tracked boxes belong to tracks seen long enough to show; each sighting adds a frame."""
    interval = float(np.median(video.intervals)) if video.intervals else fallback_interval
    step = min(interval, min_seen) if interval > 0 else min_seen  # a stalled stream: one frame is no minute's proof
    shown = np.zeros(len(ids), dtype=bool)
    for i, key in enumerate(ids):
        track = video.tracks.get(int(key)) if key >= 0 else None
        if track is None:
            continue
        track.seen += step
        shown[i] = track.seen >= min_seen - 1e-9
    return shown


def _centre(box: np.ndarray) -> np.ndarray:
    return np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def associate(video: _Video, boxes: np.ndarray, conf: np.ndarray, classes: np.ndarray, now: float,
              activation: float, lost_seconds: float, min_overlap: float, max_speed: float,
              frame: tuple[int, int] | None = None) -> np.ndarray:
    """Tracker ids for one frame's boxes (-1: left untracked: too unsure to start a track); tracks updated.

    frame (width, height): a track predicted to be out of it has left, and no one new in the frame takes its id.
    """
    if video.clock is not None and now > video.clock:
        video.intervals.append(now - video.clock)
    video.clock = now if video.clock is None else max(video.clock, now)
    keys = list(video.tracks)
    cost = np.full((len(boxes), len(keys)), _FAR)
    predictions = []
    for j, key in enumerate(keys):
        t = video.tracks[key]
        dt = max(now - t.time, 0.0)
        height = max(t.box[3] - t.box[1], 1.0)
        predicted = _centre(t.box) + t.velocity * dt
        predictions.append(predicted)
        reach = SETTLE + max_speed * dt
        if frame is not None and not (0 <= predicted[0] <= frame[0] and 0 <= predicted[1] <= frame[1]):
            continue  # walked out of view: someone entering 2 s later across the frame is not them turning back
        for i, box in enumerate(boxes):
            if classes[i] != t.class_id:
                continue
            ratio = (box[3] - box[1]) / height
            if not 0.6 <= ratio <= 1.67:
                continue  # not the same object: its size jumped
            distance = float(np.hypot(*(_centre(box) - predicted))) / height
            if distance <= reach or _iou(box, t.box) * conf[i] >= min_overlap:
                cost[i, j] = distance
    ids = np.full(len(boxes), -1, dtype=int)
    if len(boxes) and keys:
        rows, cols = linear_sum_assignment(cost)
        for i, j in zip(rows, cols, strict=True):
            if cost[i, j] >= _FAR:
                continue
            key = keys[j]
            t = video.tracks.pop(key)
            dt = now - t.time
            height = max(t.box[3] - t.box[1], 1.0)
            moved = float(np.hypot(*(_centre(boxes[i]) - _centre(t.box)))) / height
            missed = float(np.hypot(*(_centre(boxes[i]) - predictions[j]))) / height
            # A moving object: how much of the reach its move took. Only a move its track predicted (off by under
            # half of it) is motion: a box that jumps off a standing or slow person (HOG's boxes switch scales, a
            # pair merges) is the detector, and at 10 fps such jumps alone filled the reach ("raise fps" at 10 fps).
            if dt > 0 and moved > SETTLE and missed < CONSISTENT * moved:
                video.used.append(moved / (SETTLE + max_speed * dt))
            if dt > 0:  # smoothed: one jittery box must not fling the prediction
                t.velocity = 0.5 * t.velocity + 0.5 * (_centre(boxes[i]) - _centre(t.box)) / dt
            t.box, t.time = boxes[i].astype(np.float64), max(t.time, now)
            video.tracks[key] = t
            ids[i] = key
    for i in np.flatnonzero(ids < 0):
        if conf[i] >= activation:
            ids[i] = video.next_id
            video.tracks[video.next_id] = _Track(boxes[i].astype(np.float64), np.zeros(2), now, int(classes[i]))
            video.next_id += 1
    while video.tracks:  # oldest sighting first
        key, t = next(iter(video.tracks.items()))
        if now - t.time <= lost_seconds and len(video.tracks) <= MAX_TRACKS:
            break
        del video.tracks[key]
    return ids


class TrackerBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        self._videos: OrderedDict[str, _Video] = OrderedDict()
        self._seen: dict[str, set[int]] = {}

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return TrackerManifest

    def run(self, image: WorkflowImageData, detections: sv.Detections, track_activation_threshold: float,
            lost_track_buffer: int, minimum_matching_threshold: float, max_speed: float,
            min_seen_seconds: float = 0.3) -> BlockResult:
        metadata = image.video_metadata
        key = str(metadata.video_identifier)
        video = self._videos.pop(key, None) or _Video()
        self._videos[key] = video
        while len(self._videos) > MAX_VIDEOS:
            gone, _ = self._videos.popitem(last=False)
            self._seen.pop(gone, None)
        n = len(detections)
        conf = detections.confidence if detections.confidence is not None else np.ones(n)
        classes = detections.class_id if detections.class_id is not None else np.zeros(n, dtype=int)
        lost_seconds = max(float(lost_track_buffer), 1.0) / 30.0
        ids = associate(video, detections.xyxy.astype(np.float64), np.asarray(conf, dtype=np.float64),
                        np.asarray(classes), video_time(metadata), float(track_activation_threshold),
                        lost_seconds, 1.0 - float(minimum_matching_threshold), max(float(max_speed), 0.0),
                        (image.numpy_image.shape[1], image.numpy_image.shape[0]))
        # A file or stream's declared rate stands in for the real interval until two frames have come.
        shown = confirmed(video, ids, 1.0 / metadata.fps if metadata.fps else 0.0, max(float(min_seen_seconds), 0.0))
        tracked: Any = detections[shown]
        tracked.tracker_id = ids[shown]
        seen = self._seen.setdefault(key, set())
        new = np.array([int(t) not in seen for t in tracked.tracker_id], dtype=bool)
        seen.intersection_update(video.tracks)  # forgotten tracks leave the set: it stays bounded
        seen.update(int(t) for t in tracked.tracker_id)
        return {"tracked_detections": tracked, "new_instances": tracked[new], "already_seen_instances": tracked[~new],
                "tracking": video.tracking(lost_seconds)}

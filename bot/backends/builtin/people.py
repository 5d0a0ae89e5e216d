"""OpenCV HOG people, upscaled to the camera, with real NMS (model id builtin/people)."""

from __future__ import annotations

import threading
from typing import Literal

import cv2
import numpy as np
import supervision as sv
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    BOOLEAN_KIND,
    DICTIONARY_KIND,
    FLOAT_KIND,
    FLOAT_ZERO_TO_ONE_KIND,
    INTEGER_KIND,
    FloatZeroToOne,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import (
    PREDICTIONS,
    _confidence_field,
    _DetectorManifest,
    _schema_extra,
    _xywh_to_xyxy,
    is_video_frame,
    to_detections,
)
from bot.backends.builtin.light import REST_SECONDS, LightState, brighten, measure, prepare
from bot.backends.builtin.light import account as account_light
from bot.backends.builtin.light import conditions as light_conditions
from bot.backends.builtin.line_counter import video_time
from bot.backends.builtin.motion_gate import Gates
from bot.backends.builtin.people_carry import carry, fresh_only, remember, unscanned
from bot.backends.builtin.people_scale import (
    GAP_SECONDS,
    UPSCALE_CAP,
    VIDEO_FIRST_PX,
    CameraState,
    account,
    conditions,
    fitted,
    observe,
    plan,
    still_scale,
)
from bot.backends.builtin.people_turn import TurnWatch
from bot.backends.builtin.recent import Recent


class HogPeopleManifest(_DetectorManifest):
    type: Literal["vision_agent/hog_people_detector@v1"]
    model_config = ConfigDict(
        json_schema_extra=_schema_extra(
            "HOG People Detector",
            "Detect standing people offline with OpenCV's HOG + linear SVM (model id builtin/people).",
            "Runs OpenCV's default HOG people detector; needs no weights download or network. Outputs "
            "object-detection predictions with class `person`, boxes tight from head to feet. Finds upright, "
            "mostly unoccluded people; misses people sitting, lying, cut off by the frame edge or seen from "
            "above. In video (`adaptive`) it measures how tall people are in this camera from the moving blobs "
            "shaped like a person, upscales to that, and scans where things move (the whole frame every few "
            "seconds; at 4 fps and up a person found twice running, apart from others, is followed into the next "
            "frame by their picture instead of a scan, and a crop holding only people found the frame before is "
            "scanned at their own size; with `motion_gate`, a frame where nothing moved repeats the "
            "last findings, the whole frame scanned at least every 4 s, and in a picture too dark or noisy to find the "
            "people moving in it for 20 s of video it looks once a second until it finds them or the light comes "
            "back; before it has measured, people from 64 px); "
            "a still image is scanned whole, upscaled until its longer side reaches `max_side` (at most 4x), so a "
            "small still finds people from 24-30 px tall and a large one is scaled down to `max_side`; `min_height` "
            "sets the smallest person instead.",
        )
    )
    confidence: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = _confidence_field(0.5)
    min_height: Selector(kind=[INTEGER_KIND]) | int | None = Field(
        default=None, description="Smallest person to find, in pixels tall, on a still or before people are "
        "measured; smaller is slower (64 upscales 1.5x). Default: on a still as small as max_side allows (down to "
        "24 px), in video 64 until people are measured."
    )
    max_side: Selector(kind=[INTEGER_KIND]) | int = Field(
        default=1280, description="Cap on the longer side of the (upscaled) image the detector scans; bounds time."
    )
    scale_step: Selector(kind=[FLOAT_KIND]) | float = Field(
        default=1.1, description="Image pyramid step (>1); 1.05 finds a few more people at half the speed."
    )
    iou_threshold: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = Field(
        default=0.45, description="Non-maximum suppression: of two boxes overlapping more, keep the surer one."
    )
    adaptive: Selector(kind=[BOOLEAN_KIND]) | bool = Field(
        default=True, description="In video: upscale to the people's measured size and scan where things move."
    )

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        # `camera`: people's measured height, the smallest the detector finds, time moving unseen (its limits)
        return PREDICTIONS + [OutputDefinition(name="camera", kind=[DICTIONARY_KIND])]


# The default SVM's window is 64×128 px with the person ~96 px tall in it: upscale so min_height fills that,
# and trim the window's margins so boxes hug the person (bottom centre = feet, for line counting).
_HOG_PERSON_PX = 96.0
_HOG_WINDOW = (64, 128)  # width, height
_HOG_MAX_SIDE = 2048  # whatever max_side a spec asks for (HOG on a 2048×1536 frame: ~1 s on one core)
_HOG_TRIM = (0.18, 0.07)  # share of window width/height trimmed per side, measured on bench/data/vtest_people.json
_HOG_BOX_PX = _HOG_WINDOW[1] * (1 - 2 * _HOG_TRIM[1])  # a box's height at the scale HOG found it (~110 px)
MAX_VIDEOS = 16  # cameras measured at once per block (a background model is a few MB); least recently seen goes


def _squash(margins: np.ndarray) -> np.ndarray:
    """SVM margins are unbounded; a logistic squashes them to (0, 1) with margin 0.8 -> 0.5 (the measured operating
    point: precision 1.0 at recall 0.92 on the street labels; margin 0 -> 0.08)."""
    return (1.0 / (1.0 + np.exp(-3.0 * (margins - 0.8)))).astype(np.float32)


def _confidences(detections: sv.Detections) -> np.ndarray:
    if detections.confidence is None:
        return np.ones(len(detections), np.float32)
    return np.asarray(detections.confidence, np.float32).copy()


class HogPeopleDetectorBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        self._hog = cv2.HOGDescriptor()
        self._hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
        self._lock = threading.Lock()
        self._cameras: Recent[str, CameraState] = Recent(MAX_VIDEOS)
        self._turns: Recent[str, TurnWatch] = Recent(MAX_VIDEOS)  # whether each camera looks turned
        self._gates = Gates()
        self._lights: Recent[str, LightState] = Recent(MAX_VIDEOS)  # each camera's light (builtin/light.py)

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return HogPeopleManifest

    def run(
        self, images: WorkflowImageData, confidence: float, min_height: int | None, max_side: int, scale_step: float,
        iou_threshold: float, adaptive: bool = True, motion_gate: bool = True,
    ) -> BlockResult:
        state = self._camera(images) if adaptive else None
        dt = 0.0 if state is None else self._dt(state, images)
        light = self._light(images)
        resting = state is not None and light.resting(state.found_share)
        repeated = self._gates.repeat(images, REST_SECONDS if resting else 0.0) if motion_gate else None
        if repeated is not None:  # nothing moved since the last run, or a resting camera: the same people, there
            if state is not None and resting:  # the next look takes this time as its own (a camera that slow)
                state.held += dt
            elif state is not None:
                state.since_full += dt  # the full pass keeps its period
            detections = to_detections(images, repeated[0], repeated[1], "person")
            return self._output(images, state, detections, self._unmeasured(images, min_height, max_side)[1], light,
                                motion_gate)
        frame_dt = dt  # this frame's own interval; dt takes a resting camera's skipped frames too
        if state is not None:
            dt, state.held = dt + state.held, 0.0
        frame = images.numpy_image
        now = self._now(images)
        measure(light, frame, now)  # dark or noisy: the crops are lifted / denoised before HOG sees them
        side, smallest = self._unmeasured(images, min_height, max_side)
        default_scale = _HOG_PERSON_PX / smallest
        before = np.zeros((0, 4), np.float32)
        whole = [(0, 0, frame.shape[1], frame.shape[0])]
        scale, crops = default_scale, whole
        if state is not None:
            regions = observe(state, frame, dt, lambda small: brighten(light, small))
            # people followed from the last frame by their picture: HOG scans neither them nor the blob they explain
            carried, carried_confidence, regions = carry(state, frame, now, regions, light.poor())
            before, state.last_boxes = state.last_boxes, unscanned(carried, state.last_boxes)
            scale, crops = plan(state, frame.shape, regions, default_scale, _HOG_WINDOW, _HOG_PERSON_PX,
                                dt, light.poor())
        if state is None or crops == whole:  # HOG looks everywhere, at one upscale: nothing is carried
            carried, carried_confidence = np.zeros((0, 4), np.float32), np.zeros(0, np.float32)
            scales = [scale]
        else:
            scales = fitted(state, crops, regions, scale, _HOG_WINDOW, _HOG_BOX_PX, dt, light.poor())
        found = [self._scan(frame, crop, min(s, side / max(crop[2] - crop[0], crop[3] - crop[1])), scale_step,
                            light) for crop, s in zip(crops, scales, strict=True)]
        boxes = np.concatenate([b for b, _ in found]) if found else np.zeros((0, 4), np.float32)
        margins = np.concatenate([m for _, m in found]) if found else np.zeros(0, np.float32)
        carried, carried_confidence = fresh_only(carried, carried_confidence, boxes[_squash(margins) >= confidence])
        detections = to_detections(images, np.concatenate([boxes, carried]),
                                   np.concatenate([_squash(margins), carried_confidence]), "person", confidence)
        if len(detections) > 1:
            detections = detections.with_nms(threshold=iou_threshold)
        if motion_gate:
            self._gates.found(images, (detections.xyxy.copy(), _confidences(detections)))
        if state is not None:
            remember(state, frame, now, detections.xyxy, _confidences(detections), carried, before)
            state.last_boxes = detections.xyxy.copy()
            spent = min(dt, GAP_SECONDS)  # a gap in the video was not watched: it is not time unseen
            account(state, len(detections), spent)
            account_light(light, [box for box, lying in state.shaped if not lying], detections.xyxy, spent,
                          min(frame_dt, spent) if frame_dt else None)
            self._turn(images).after(frame, state.shaped, len(detections), dt,
                                     lambda image, s: self._count(image, s, scale_step, confidence))
        return self._output(images, state, detections, smallest, light, motion_gate)

    def _output(self, images: WorkflowImageData, state: CameraState | None, detections: sv.Detections,
                smallest: float, light: LightState, gated: bool) -> BlockResult:
        if state is None:  # a still (or adaptive off): nothing measured; it finds people from `smallest` px tall
            return {"predictions": detections, "camera": {**conditions(CameraState(), smallest),
                                                          **light_conditions(light), "resting": False}}
        # `turned`: the camera looks mounted turned, by this many degrees clockwise (people_turn.py), or None;
        # `resting`: the light is too poor to see anyone, so the detector looks once a second (through the gate)
        return {"predictions": detections, "camera": {**conditions(state, _HOG_PERSON_PX / UPSCALE_CAP),
                                                      "turned": self._turn(images).turned,
                                                      **light_conditions(light),
                                                      "resting": gated and light.resting(state.found_share)}}

    def _light(self, images: WorkflowImageData) -> LightState:
        """This video's measured light; a fresh one for a still (measured on itself: its brightness, no noise)."""
        if not is_video_frame(images):
            return LightState()
        return self._lights.get(str(images.video_metadata.video_identifier), LightState)

    @staticmethod
    def _now(images: WorkflowImageData) -> float | None:
        return video_time(images.video_metadata) if is_video_frame(images) else None

    def _turn(self, images: WorkflowImageData) -> TurnWatch:
        return self._turns.get(str(images.video_metadata.video_identifier), TurnWatch)

    def _count(self, image: np.ndarray, scale: float, scale_step: float, confidence: float) -> int:
        """People found in `image` at one upscale, as sure as the block's `confidence` asks (people_turn's probes)."""
        _, margins = self._scan(image, (0, 0, image.shape[1], image.shape[0]), scale, scale_step)
        return int(np.count_nonzero(_squash(margins) >= confidence))

    @staticmethod
    def _unmeasured(images: WorkflowImageData, min_height: int | None, max_side: int) -> tuple[float, float]:
        """(the scan's longest side, the smallest person px) while people are not measured: a still (one rule
        whatever the door, people_scale.still_scale), or a video's first frames (people from VIDEO_FIRST_PX)."""
        # Specs are untrusted: min_height 0 or max_side 10^6 must not make a 12× image (memory, minutes per frame).
        side = min(max(float(max_side), 128.0), float(_HOG_MAX_SIDE))
        shape = images.numpy_image.shape
        if is_video_frame(images):
            scale = _HOG_PERSON_PX / max(int(min_height or VIDEO_FIRST_PX), 8)
        else:
            scale = still_scale(shape, min_height, side, _HOG_PERSON_PX)
        return side, _HOG_PERSON_PX / min(scale, side / max(shape[:2]))

    def _scan(self, frame: np.ndarray, crop: tuple[int, int, int, int], scale: float,
              scale_step: float, light: LightState | None = None) -> tuple[np.ndarray, np.ndarray]:
        """HOG over one crop of the frame at one upscale, lifted / denoised for its light: (boxes in frame px, SVM
        margins)."""
        x1, y1, x2, y2 = crop
        part = frame[y1:y2, x1:x2]
        if part.shape[0] * scale < _HOG_WINDOW[1] or part.shape[1] * scale < _HOG_WINDOW[0]:
            # No person fits; and OpenCV's HOG segfaults (the whole bot) on some images smaller than its window.
            return np.zeros((0, 4), np.float32), np.zeros(0, np.float32)
        part = prepare(light, part, scale)
        work = part if scale == 1.0 else cv2.resize(part, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)
        with self._lock:
            rects, weights = self._hog.detectMultiScale(
                work, winStride=(8, 8), padding=(8, 8), scale=max(float(scale_step), 1.01)
            )
        boxes = _xywh_to_xyxy(rects)
        trim = np.array([_HOG_TRIM[0], _HOG_TRIM[1], -_HOG_TRIM[0], -_HOG_TRIM[1]], dtype=np.float32)
        sizes = np.tile(boxes[:, 2:4] - boxes[:, 0:2], 2)
        boxes = (boxes + trim * sizes) / scale + np.array([x1, y1, x1, y1], np.float32)
        return boxes.astype(np.float32), np.asarray(weights, dtype=np.float32).reshape(-1)

    def _camera(self, images: WorkflowImageData) -> CameraState | None:
        """This video's measured state; None for a still image (nothing to measure: the default upscale)."""
        if not is_video_frame(images):
            return None
        return self._cameras.get(str(images.video_metadata.video_identifier), CameraState)

    @staticmethod
    def _dt(state: CameraState, images: WorkflowImageData) -> float:
        """Seconds of video since this camera's previous frame (0 on its first)."""
        now = video_time(images.video_metadata)
        last, state.clock = state.clock, now
        return 0.0 if last is None else max(0.0, now - last)

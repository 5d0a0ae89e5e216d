"""A line counter that remembers each track's side through short gaps (block vision_agent/line_counter@v1).

Same inputs and outputs as roboflow_core/line_counter@v2 (count_in, count_out, detections_in, detections_out), so
`line=` pipelines, the monitor's line_crossed rule and the timeline read it unchanged; the counting itself is
bot/backends/builtin/crossings.py (why: a person lost for a moment at the line was never counted).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import supervision as sv
from inference.core.workflows.execution_engine.entities.base import (
    OutputDefinition,
    VideoMetadata,
    WorkflowImageData,
)
from inference.core.workflows.execution_engine.entities.types import (
    FLOAT_KIND,
    INSTANCE_SEGMENTATION_PREDICTION_KIND,
    INTEGER_KIND,
    LIST_OF_VALUES_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    STRING_KIND,
    Selector,
    WorkflowImageSelector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import _EE_COMPAT
from bot.backends.builtin.crossings import LineCrossings
from bot.backends.builtin.recent import Recent

MAX_VIDEOS = 64  # lines kept per block (one per video): the oldest goes first, so memory stays bounded
_DETECTIONS = [OBJECT_DETECTION_PREDICTION_KIND, INSTANCE_SEGMENTATION_PREDICTION_KIND]


class LineCounterManifest(WorkflowBlockManifest):
    type: Literal["vision_agent/line_counter@v1"]
    model_config = ConfigDict(json_schema_extra={
        "name": "Line Counter (gap-tolerant)",
        "version": "v1",
        "short_description": "Count tracked objects crossing a line, through short detection gaps.",
        "long_description": (
            "Like roboflow_core/line_counter@v2 (same outputs: count_in, count_out, detections_in, "
            "detections_out), but each tracker id's side of the line is remembered for `memory_seconds` after it "
            "was last seen, so someone the detector or tracker loses for a moment right at the line is still "
            "counted. After a crossing, an object must get `hysteresis` × its box height past the line to count "
            "again, so a box jittering on the line counts once. Needs tracked detections (byte tracker)."),
        "license": "Apache-2.0",
        "block_type": "analytics",
        "ui_manifest": {"section": "video", "icon": "far fa-arrow-down-up-across-line"},
    })
    image: WorkflowImageSelector = Field(
        description="The frame, for its video metadata (which video, frame number, time).",
        examples=["$inputs.image"])
    detections: Selector(kind=_DETECTIONS) = Field(
        description="Tracked detections (with tracker ids).", examples=["$steps.tracker.tracked_detections"])
    line_segment: list | Selector(kind=[LIST_OF_VALUES_KIND]) = Field(
        description="Two [x, y] points in pixels; crossing to the right of start→end counts in.",
        examples=[[[320, 0], [320, 480]]])
    triggering_anchor: str | Selector(kind=[STRING_KIND]) = Field(
        default="CENTER", description="The box point that must cross: CENTER, BOTTOM_CENTER (feet), ...",
        examples=["BOTTOM_CENTER"])
    memory_seconds: float | Selector(kind=[FLOAT_KIND]) = Field(
        default=3.0, description="How long a track's side is kept after it was last seen.")
    hysteresis: float | Selector(kind=[FLOAT_KIND]) = Field(
        default=0.03, description="Share of the box height an object must get past the line to count again.")

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return [OutputDefinition(name="count_in", kind=[INTEGER_KIND]),
                OutputDefinition(name="count_out", kind=[INTEGER_KIND]),
                OutputDefinition(name="detections_in", kind=_DETECTIONS),
                OutputDefinition(name="detections_out", kind=_DETECTIONS)]

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT


class LineCounterBlockV1(WorkflowBlock):
    def __init__(self) -> None:
        self._lines: Recent[tuple[str, str], LineCrossings] = Recent(MAX_VIDEOS)

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return LineCounterManifest

    def run(self, detections: sv.Detections, image: WorkflowImageData, line_segment: list,
            triggering_anchor: str, memory_seconds: float, hysteresis: float) -> BlockResult:
        if detections.tracker_id is None:
            if len(detections):
                raise ValueError("vision_agent/line_counter@v1 needs tracked detections: put a byte tracker before it")
            # Nothing to count. Steps between the tracker and the counter (time_in_zone) hand on a frame with no one
            # in it as sv.Detections.empty(), whose tracker_id is None: a line beside a zone failed on such a frame.
            detections = sv.Detections.empty()
            detections.tracker_id = np.zeros(0, dtype=int)
        metadata = image.video_metadata
        counter = self._line(metadata.video_identifier, line_segment, memory_seconds)
        anchors = detections.get_anchors_coordinates(sv.Position(triggering_anchor))
        heights = detections.xyxy[:, 3] - detections.xyxy[:, 1]
        mask_in, mask_out = counter.update(anchors, detections.tracker_id, video_time(metadata),
                                           np.clip(float(hysteresis), 0.0, 1.0) * heights)
        return {"count_in": counter.in_count, "count_out": counter.out_count,
                "detections_in": detections[mask_in], "detections_out": detections[mask_out]}

    def _line(self, video: str, segment: list, memory_seconds: float) -> LineCrossings:
        """This video's counter; a spec whose line changed gets a fresh one."""
        start, end = _points(segment)
        key = (str(video), repr((start, end)))
        return self._lines.get(key, lambda: LineCrossings(start, end, memory_seconds=memory_seconds))


def video_time(metadata: VideoMetadata) -> float:
    """Seconds into the video: frame number / fps for files (they may be read faster than real time), else the clock."""
    if metadata.comes_from_video_file and metadata.fps:
        return float(metadata.frame_number) / float(metadata.fps)
    return metadata.frame_timestamp.timestamp()


def _points(segment: list) -> tuple[tuple[float, float], tuple[float, float]]:
    """The line's two points; ValueError (one line) for anything else."""
    try:
        (x1, y1), (x2, y2) = ((float(p[0]), float(p[1])) for p in segment)
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError("line_segment must be two [x, y] points in pixels, e.g. [[320, 0], [320, 480]]") from exc
    return (x1, y1), (x2, y2)

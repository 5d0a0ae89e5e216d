"""Detection labels kept whole inside the frame, sized to it (block vision_agent/labels@v1).

roboflow_core/label_visualization@v1 builds sv.LabelAnnotator without smart_position, so a box touching the top,
left, right or bottom of the frame gets its label drawn partly (or wholly) outside the picture, and its text scale
is one number whatever the frame. Here each label ("person 0.87 #12") is moved back inside the frame and away from
its neighbours (supervision's smart_position), and the text is sized from the frame's width (frame_scale's sizes).
"""

from __future__ import annotations

from typing import Any, Literal

import supervision as sv
from inference.core.workflows.execution_engine.entities.base import WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    IMAGE_KIND,
    INSTANCE_SEGMENTATION_PREDICTION_KIND,
    KEYPOINT_DETECTION_PREDICTION_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    Selector,
)
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field
from supervision.config import CLASS_NAME_DATA_FIELD

from bot.backends.builtin.drawing_block import DrawingManifest, drawn, visualization_card
from bot.backends.builtin.label_drawing import draw_labels, label_text


class LabelsManifest(DrawingManifest):
    type: Literal["vision_agent/labels@v1"]
    model_config = ConfigDict(json_schema_extra=visualization_card(
        "Labels inside the frame", "Label each box 'class confidence #id', kept whole inside the frame.",
        "Draws one label per detection (class, confidence, and the tracker id when there is one) above its box, "
        "moved inside the frame when the box touches an edge and spread apart where labels would overlap "
        "(unlike label_visualization, whose labels are cut off at the frame's edges); text sized from the "
        "frame's width, as frame_scale gives it.", "far fa-tag"))
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame to draw on.", examples=["$steps.boxes.image"])
    predictions: Selector(kind=[OBJECT_DETECTION_PREDICTION_KIND, INSTANCE_SEGMENTATION_PREDICTION_KIND,
                                KEYPOINT_DETECTION_PREDICTION_KIND]) = Field(
        description="The detections to label.", examples=["$steps.tracker.tracked_detections"])


class LabelsBlockV1(WorkflowBlock):
    runs = 0  # frames labelled in this process: tests count that a frame nobody reads is never drawn

    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return LabelsManifest

    def run(self, image: WorkflowImageData, predictions: sv.Detections) -> BlockResult:
        LabelsBlockV1.runs += 1  # one engine runs its steps one frame at a time; a lost count is only a count
        names = predictions.data.get(CLASS_NAME_DATA_FIELD, [None] * len(predictions))
        texts = [label_text(name, conf, tid) for name, conf, tid in _rows(predictions, names)]
        return drawn(image, draw_labels(image.numpy_image.copy(), predictions, texts))


def _rows(detections: sv.Detections, names: Any) -> list[tuple[Any, Any, Any]]:
    count = len(detections)
    confidences = detections.confidence if detections.confidence is not None else [None] * count
    trackers = detections.tracker_id if detections.tracker_id is not None else [None] * count
    return list(zip(names, confidences, trackers, strict=True))

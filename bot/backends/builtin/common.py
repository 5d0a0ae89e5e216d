"""What every builtin detector block shares: its manifest base, output kinds and the boxes → sv.Detections step."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import numpy as np
import supervision as sv
from inference.core.workflows.core_steps.common.utils import (
    attach_parents_coordinates_to_sv_detections,
    empty_detections_with_image_metadata,
)
from inference.core.workflows.execution_engine.constants import (
    DETECTION_ID_KEY,
    IMAGE_DIMENSIONS_KEY,
    PARENT_ID_KEY,
    PREDICTION_TYPE_KEY,
)
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import (
    BOOLEAN_KIND,
    FLOAT_ZERO_TO_ONE_KIND,
    IMAGE_KIND,
    OBJECT_DETECTION_PREDICTION_KIND,
    FloatZeroToOne,
    Selector,
)
from inference.core.workflows.prototypes.block import WorkflowBlockManifest
from pydantic import AliasChoices, Field
from supervision.config import CLASS_NAME_DATA_FIELD

PREDICTIONS = [OutputDefinition(name="predictions", kind=[OBJECT_DETECTION_PREDICTION_KIND])]
_EE_COMPAT = ">=1.3.0,<2.0.0"


def _schema_extra(name: str, short: str, long: str) -> dict[str, Any]:
    return {
        "name": name,
        "version": "v1",
        "short_description": short,
        "long_description": long,
        "license": "Apache-2.0",
        "block_type": "model",
        "ui_manifest": {"section": "model", "icon": "far fa-eye", "opencv": True},
    }


def _image_field() -> Any:
    return Field(
        title="Input Image",
        description="The image to run the detector on.",
        examples=["$inputs.image"],
        validation_alias=AliasChoices("images", "image"),
    )


def _confidence_field(default: float) -> Any:
    return Field(default=default, description="Drop detections with a lower confidence.", examples=[0.3, "$inputs.confidence"])


def to_detections(
    image: WorkflowImageData, boxes: np.ndarray, confidence: np.ndarray, class_name: str, min_confidence: float = 0.0
) -> sv.Detections:
    """Build sv.Detections with the metadata real model blocks attach (ids, parents, dimensions, prediction type)."""
    keep = confidence >= min_confidence
    boxes, confidence = boxes[keep], confidence[keep]
    if len(boxes) == 0:
        return empty_detections_with_image_metadata(image=image)
    n = len(boxes)
    detections = sv.Detections(
        xyxy=boxes.astype(np.float32),
        confidence=confidence.astype(np.float32),
        class_id=np.zeros(n, dtype=int),
        data={CLASS_NAME_DATA_FIELD: np.array([class_name] * n)},
    )
    height, width = image.numpy_image.shape[:2]
    detections[PARENT_ID_KEY] = np.array([image.parent_metadata.parent_id] * n)
    detections[PREDICTION_TYPE_KEY] = np.array(["object-detection"] * n)
    detections[DETECTION_ID_KEY] = np.array([str(uuid4()) for _ in range(n)])
    detections[IMAGE_DIMENSIONS_KEY] = np.array([[height, width]] * n)
    return attach_parents_coordinates_to_sv_detections(detections=detections, image=image)


def is_video_frame(image: WorkflowImageData) -> bool:
    """Whether the image came with video metadata (a frame of a stream or file): its `video_metadata` property makes
    some up for a still image, so only the attribute behind it tells."""
    return getattr(image, "_video_metadata", None) is not None


def _xywh_to_xyxy(rects: Any) -> np.ndarray:
    arr = np.asarray(rects, dtype=np.float32).reshape(-1, 4)
    arr[:, 2] += arr[:, 0]
    arr[:, 3] += arr[:, 1]
    return arr


# Every builtin detector takes an image and a confidence floor and outputs object-detection predictions.
class _DetectorManifest(WorkflowBlockManifest):
    images: Selector(kind=[IMAGE_KIND]) = _image_field()
    confidence: Selector(kind=[FLOAT_ZERO_TO_ONE_KIND]) | FloatZeroToOne = _confidence_field(0.0)
    motion_gate: Selector(kind=[BOOLEAN_KIND]) | bool = Field(
        default=True, description="In video: on frames where nothing moved since the detector last ran (under 4 s "
                                  "of video ago) repeat what it found then instead of running it (a quiet camera "
                                  "costs a fraction); something appearing without moving waits up to 4 s.")

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return PREDICTIONS

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT

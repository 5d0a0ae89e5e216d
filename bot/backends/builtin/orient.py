"""Frames turned upright (block vision_agent/orient@v1): a camera mounted turned or mirrored, as `rotate=` / `flip=`
set it (bot/backends/orientation.py puts this step first in a pipeline's workflow).

roboflow_core/image_preprocessing turns by any angle with warpAffine (a resampled, blurred copy, ~10x the cost of a
quarter turn) and one operation per step; a camera's mount needs a quarter turn and maybe a mirror, exactly. The
image keeps its video metadata, so the detector and tracker still know which camera and which moment it is.
"""

from __future__ import annotations

from typing import Literal

from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import DICTIONARY_KIND, IMAGE_KIND, Selector
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.common import _EE_COMPAT
from bot.backends.orientation import ORIENTATION_OUTPUT, Orientation, turn_frame


class OrientManifest(WorkflowBlockManifest):
    type: Literal["vision_agent/orient@v1"]
    model_config = ConfigDict(json_schema_extra={
        "name": "Orient frames", "version": "v1",
        "short_description": "Turn a camera's frames upright: a quarter turn and/or a mirror.",
        "long_description": "For a camera mounted turned or mirrored: turns each frame `rotate` degrees clockwise "
                            "(0, 90, 180, 270; exact, no resampling), then mirrors it (`flip`: h left-right, v "
                            "top-bottom, none). Put it first: detectors such as builtin/people find upright people "
                            "only, and lines and zones are then given in the upright frame.",
        "license": "Apache-2.0", "block_type": "transformation",
        "ui_manifest": {"section": "transformation", "icon": "far fa-rotate", "opencv": True},
    })
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame to turn.", examples=["$inputs.image"])
    rotate: Literal[0, 90, 180, 270] = Field(default=0, description="Degrees clockwise.")
    flip: Literal["none", "h", "v"] = Field(default="none", description="Mirror after the turn: h left-right, v "
                                                                        "top-bottom.")

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return [OutputDefinition(name="image", kind=[IMAGE_KIND]),
                OutputDefinition(name=ORIENTATION_OUTPUT, kind=[DICTIONARY_KIND])]

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT


class OrientBlockV1(WorkflowBlock):
    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return OrientManifest

    def run(self, image: WorkflowImageData, rotate: int = 0, flip: str = "none") -> BlockResult:
        orientation = Orientation.of(rotate, flip)
        pixels = turn_frame(image.numpy_image, orientation) if orientation else image.numpy_image
        return {"image": WorkflowImageData.copy_and_replace(origin_image_data=image, numpy_image=pixels),
                ORIENTATION_OUTPUT: orientation.as_output()}

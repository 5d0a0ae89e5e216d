"""Drawing sizes that follow the frame's width (block vision_agent/frame_scale@v1), for box and label steps.

label_visualization draws at one text scale whatever the frame: a 1920 px frame's labels were specks and a 320 px
sub-stream's covered a third of it. This block reads the frame's width and outputs sizes the drawing steps take
through selectors (`text_scale: $steps.sizes.text_scale`): our workflows take the box thickness from it (our
labels block sizes its own text the same way); hand-written specs may feed label_visualization from it.
"""

from __future__ import annotations

from typing import Literal

from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import FLOAT_KIND, IMAGE_KIND, INTEGER_KIND, Selector
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlock, WorkflowBlockManifest
from pydantic import ConfigDict, Field

from bot.backends.builtin.drawing_block import VisualizationManifest, visualization_card
from bot.backends.builtin.label_drawing import drawing_sizes


class FrameScaleManifest(VisualizationManifest):
    type: Literal["vision_agent/frame_scale@v1"]
    model_config = ConfigDict(json_schema_extra=visualization_card(
        "Frame-sized drawing", "Text scale, text thickness, padding and box thickness from the frame's width.",
        "Outputs text_scale (width/1600, at least 0.35), text_thickness, text_padding and thickness (box "
        "lines, width/400) for label and bounding box visualizations, so labels read the same on a 320 px "
        "sub-stream and a 1920 px main stream.", "far fa-text-size"))
    image: Selector(kind=[IMAGE_KIND]) = Field(description="The frame to be drawn on.", examples=["$inputs.image"])

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return [OutputDefinition(name="text_scale", kind=[FLOAT_KIND]),
                OutputDefinition(name="text_thickness", kind=[INTEGER_KIND]),
                OutputDefinition(name="text_padding", kind=[INTEGER_KIND]),
                OutputDefinition(name="thickness", kind=[INTEGER_KIND])]


class FrameScaleBlockV1(WorkflowBlock):
    @classmethod
    def get_manifest(cls) -> type[WorkflowBlockManifest]:
        return FrameScaleManifest

    def run(self, image: WorkflowImageData) -> BlockResult:
        return drawing_sizes(int(image.numpy_image.shape[1]))

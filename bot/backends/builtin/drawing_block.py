"""What every vision_agent drawing block shares: its manifest base, its schema's card and the drawn image's output."""

from __future__ import annotations

from typing import Any

import numpy as np
from inference.core.workflows.execution_engine.entities.base import OutputDefinition, WorkflowImageData
from inference.core.workflows.execution_engine.entities.types import IMAGE_KIND
from inference.core.workflows.prototypes.block import BlockResult, WorkflowBlockManifest

from bot.backends.builtin.common import _EE_COMPAT, _schema_extra


def visualization_card(name: str, short: str, long: str, icon: str) -> dict[str, Any]:
    """The manifest's json_schema_extra: how the block is listed among the visualization blocks."""
    card = _schema_extra(name, short, long)  # the detectors' card, listed in another section
    return {**card, "block_type": "visualization", "ui_manifest": {"section": "visualization", "icon": icon}}


class VisualizationManifest(WorkflowBlockManifest):
    """A visualization block of ours: runs on the engine versions our other blocks do."""

    @classmethod
    def get_execution_engine_compatibility(cls) -> str | None:
        return _EE_COMPAT


class DrawingManifest(VisualizationManifest):
    """A block that draws on a frame and outputs it as `image`."""

    @classmethod
    def describe_outputs(cls) -> list[OutputDefinition]:
        return [OutputDefinition(name="image", kind=[IMAGE_KIND])]


def drawn(image: WorkflowImageData, pixels: np.ndarray) -> BlockResult:
    """A drawing block's result: the frame with its pixels replaced, everything else about it kept."""
    return {"image": WorkflowImageData.copy_and_replace(origin_image_data=image, numpy_image=pixels)}

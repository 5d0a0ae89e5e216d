"""Workflows plugin: offline detectors (OpenCV Haar faces, HOG people, motion), the line counter, the tracker, the frames'
drawing and turning a turned camera's frames upright.

Each block lives in bot/backends/builtin/; this module is the plugin entry inference loads by name
(WORKFLOWS_PLUGINS=bot.backends.builtin_blocks) and re-exports the blocks.
"""

from __future__ import annotations

from inference.core.workflows.prototypes.block import WorkflowBlock

from bot.backends.builtin.faces import HaarFaceDetectorBlockV1, HaarFaceManifest
from bot.backends.builtin.frame_scale import FrameScaleBlockV1, FrameScaleManifest
from bot.backends.builtin.labels import LabelsBlockV1, LabelsManifest
from bot.backends.builtin.line_counter import LineCounterBlockV1, LineCounterManifest
from bot.backends.builtin.line_overlay import LineOverlayBlockV1, LineOverlayManifest
from bot.backends.builtin.motion import MotionDetectorBlockV1, MotionManifest
from bot.backends.builtin.orient import OrientBlockV1, OrientManifest
from bot.backends.builtin.people import HogPeopleDetectorBlockV1, HogPeopleManifest
from bot.backends.builtin.tracker import TrackerBlockV1, TrackerManifest

__all__ = [
    "FrameScaleBlockV1", "FrameScaleManifest", "HaarFaceDetectorBlockV1", "HaarFaceManifest", "HogPeopleDetectorBlockV1", "HogPeopleManifest",
    "LabelsBlockV1", "LabelsManifest",
    "LineCounterBlockV1", "LineCounterManifest", "LineOverlayBlockV1", "LineOverlayManifest", "MotionDetectorBlockV1", "MotionManifest",
    "OrientBlockV1", "OrientManifest", "TrackerBlockV1",
    "TrackerManifest", "load_blocks",
]


def load_blocks() -> list[type[WorkflowBlock]]:
    """Entry point of the Workflows plugin (WORKFLOWS_PLUGINS=bot.backends.builtin_blocks)."""
    return [HaarFaceDetectorBlockV1, HogPeopleDetectorBlockV1, MotionDetectorBlockV1, LineCounterBlockV1,
            LineOverlayBlockV1, TrackerBlockV1, FrameScaleBlockV1, LabelsBlockV1, OrientBlockV1]
